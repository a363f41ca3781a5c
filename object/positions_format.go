package object

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/covmirror/covmirror/coverage"
)

// The format of one source's positions object, version 1, in the style of
// the sink objects (format.go): varints in their shortest form, a string
// or cursor is its byte length then its bytes.
//
//	"CVMP"  version=1
//	source
//	partitions: count, then per partition, ascending:
//	    partition
//	    positions: count (>= 1), then per position in (batch, cursor)
//	        order, no two alike:
//	        batch-prevBatch (prevBatch 0 for the first; batch <=
//	        coverage.MaxBatchEnd)  cursor (1 to MaxCursorLen bytes)
//	CRC-32C (Castagnoli) of everything before it, 4 bytes big-endian
//
// Only one encoding is valid for a given content, so decoding then
// encoding gives back the same bytes. The per-partition bounds
// (MaxPositionsPerPartition, MaxPositionBytesPerPartition) are the
// writer's pruning policy, not the format's: a decoder accepts more, so
// that a build with larger bounds writes objects every build can read.
const (
	positionsMagic   = "CVMP"
	positionsVersion = 1
)

// The bounds on what a positions object keeps and accepts.
const (
	// MaxCursorLen is the longest cursor SavePosition accepts; a longer
	// one is coverage.ErrInvalidPosition. Cursors are opaque bytes.
	MaxCursorLen = 64 << 10

	// MaxPositionsPerPartition is how many positions a partition keeps:
	// the highest by (batch, cursor); the lowest are dropped first.
	MaxPositionsPerPartition = 256

	// MaxPositionBytesPerPartition bounds the cursor bytes a partition
	// keeps, so that long cursors do not make every save rewrite
	// megabytes; again the lowest positions are dropped first, and the
	// highest is always kept.
	MaxPositionBytesPerPartition = 1 << 20
)

// positionsObject is one source's positions object, decoded.
type positionsObject struct {
	Source     string
	Partitions []partitionPositions // sorted by Partition, unique
}

// partitionPositions is one partition's positions, sorted by
// coverage.ComparePositions, unique, none empty. Only Batch and Cursor of
// each are set: the source and partition are the object's.
type partitionPositions struct {
	Partition int32
	Positions []coverage.Position
}

// encodePositions returns o's bytes. o must be valid (as decodePositions
// would accept): Positions only encodes what it decoded or merged.
func encodePositions(o *positionsObject) []byte {
	size := 32 + len(o.Source)
	for _, p := range o.Partitions {
		size += 8
		for _, pos := range p.Positions {
			size += 12 + len(pos.Cursor)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, positionsMagic...)
	b = append(b, positionsVersion)
	b = appendString(b, o.Source)
	b = binary.AppendUvarint(b, uint64(len(o.Partitions)))
	for _, p := range o.Partitions {
		b = binary.AppendUvarint(b, uint64(p.Partition))
		b = binary.AppendUvarint(b, uint64(len(p.Positions)))
		var prev uint64
		for _, pos := range p.Positions {
			b = binary.AppendUvarint(b, pos.Batch-prev)
			b = binary.AppendUvarint(b, uint64(len(pos.Cursor)))
			b = append(b, pos.Cursor...)
			prev = pos.Batch
		}
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodePositions parses and checks a positions object. Every failure is
// ErrUnknownVersion or ErrCorruptObject with what was wrong, and where.
func decodePositions(b []byte) (*positionsObject, error) {
	const header = len(positionsMagic) + 1
	if len(b) < header+4 {
		return nil, fmt.Errorf("%w: positions object of %d bytes, shorter than a header and checksum", ErrCorruptObject, len(b))
	}
	if string(b[:len(positionsMagic)]) != positionsMagic {
		return nil, fmt.Errorf("%w: no %q magic: not a positions object", ErrCorruptObject, positionsMagic)
	}
	// The version comes before the checksum: a later version may lay its
	// trailer out otherwise.
	if v := b[len(positionsMagic)]; v != positionsVersion {
		return nil, fmt.Errorf("%w: positions object version %d (this build reads %d)", ErrUnknownVersion, v, positionsVersion)
	}
	body := b[:len(b)-4]
	if want, got := binary.BigEndian.Uint32(b[len(b)-4:]), crc32.Checksum(body, castagnoli); want != got {
		return nil, fmt.Errorf("%w: positions object checksum %08x, content sums to %08x", ErrCorruptObject, want, got)
	}
	r := &reader{b: body, off: header}
	o := r.positions()
	if r.err == nil && r.off != len(body) {
		r.fail("%d trailing bytes", len(body)-r.off)
	}
	if r.err != nil {
		return nil, r.err
	}
	return o, nil
}

func (r *reader) positions() *positionsObject {
	o := &positionsObject{Source: r.string("source")}
	if err := (coverage.Source{Name: o.Source, Regime: coverage.Stored}).Validate(); r.err == nil && err != nil {
		r.fail("source: %v", err)
	}
	// A position takes at least 3 bytes (a batch delta, a cursor length
	// and one cursor byte), a partition at least 5 (its number, a count
	// and one position): count refuses counts the bytes left cannot hold.
	n := r.count("partition count", 5)
	for i := 0; i < n && r.err == nil; i++ {
		p := r.partitionPositions()
		if r.err == nil && i > 0 && o.Partitions[i-1].Partition >= p.Partition {
			r.fail("partition %d after %d: out of order", p.Partition, o.Partitions[i-1].Partition)
		}
		o.Partitions = append(o.Partitions, p)
	}
	return o
}

func (r *reader) partitionPositions() partitionPositions {
	part := r.uvarint("partition")
	if r.err == nil && part > math.MaxInt32 {
		r.fail("partition %d past %d", part, math.MaxInt32)
	}
	p := partitionPositions{Partition: int32(part)}
	n := r.count("position count", 3)
	if r.err == nil && n == 0 {
		r.fail("partition %d has no positions", p.Partition)
	}
	p.Positions = make([]coverage.Position, 0, n)
	var prev uint64
	for i := 0; i < n && r.err == nil; i++ {
		delta := r.uvarint("batch delta")
		length := r.count("cursor length", 1)
		switch {
		case r.err != nil:
		case delta > coverage.MaxBatchEnd-prev:
			r.fail("partition %d: position %d's batch is past %d", p.Partition, i, uint64(coverage.MaxBatchEnd))
		case length == 0:
			r.fail("partition %d: position %d has an empty cursor", p.Partition, i)
		case length > MaxCursorLen:
			r.fail("partition %d: position %d's cursor is %d bytes, past %d", p.Partition, i, length, MaxCursorLen)
		default:
			pos := coverage.Position{Batch: prev + delta, Cursor: slices.Clone(r.b[r.off : r.off+length])}
			r.off += length
			if i > 0 && delta == 0 && bytes.Compare(p.Positions[i-1].Cursor, pos.Cursor) >= 0 {
				r.fail("partition %d: position %d is not after the one before it", p.Partition, i)
				break
			}
			prev = pos.Batch
			p.Positions = append(p.Positions, pos)
		}
	}
	return p
}
