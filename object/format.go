package object

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// The format of one sink's object, version 1. Every integer is a varint
// (unsigned, or zigzag-signed for times) in its shortest form; a string
// is its byte length then its bytes.
//
//	"CVMO"  version=1
//	sink
//	destinations: count, then per destination in (topic, partition) order:
//	    topic  partition  last-writer  last-write(unix ns, signed)
//	    ranges: count (>= 1), then per range, ascending:
//	        start-prevEnd (prevEnd 0 for the first; >= 1 after it: ranges
//	        never touch)  end-start (>= 1)
//	writers: count, then per writer in name order:
//	    writer  last-write(unix ns, signed)
//	    names: count (>= 1), then per name, oldest first:
//	        name  sinks(the checkpoint's sink count, >= 1)  digest(16 bytes)
//	CRC-32C (Castagnoli) of everything before it, 4 bytes big-endian
//
// Only one encoding is valid for a given content, so decoding then
// encoding gives back the same bytes.
const (
	formatMagic   = "CVMO"
	formatVersion = 1
	digestLen     = 16
)

// The bounds on the recent names a sink's object keeps, which bound how
// far back Landed and ErrNameReused can see (past them Landed answers
// false, which costs a harmless duplicate append).
const (
	// MaxNamesPerWriter is how many of a writer's latest checkpoint names
	// a sink's object keeps; older ones are dropped first.
	MaxNamesPerWriter = 64

	// MaxWriters is how many writers a sink's object keeps names for; the
	// writer whose last write is oldest is dropped first.
	MaxWriters = 256
)

var (
	// ErrUnknownVersion: a sink's object was written in a format version
	// this build does not know (by a newer covmirror). It is neither read
	// nor overwritten: upgrade this process.
	ErrUnknownVersion = errors.New("sink object has an unknown format version")

	// ErrCorruptObject: a sink's object cannot be read back as written (a
	// bad checksum, truncation, trailing bytes, ranges out of order or
	// past coverage.MaxBatchEnd, or another sink's content under the key).
	// It is never overwritten; the error names the key. It matches
	// coverage.ErrCorrupt too.
	ErrCorruptObject = fmt.Errorf("corrupt sink object: %w", coverage.ErrCorrupt)
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// sinkObject is one sink's object, decoded.
type sinkObject struct {
	Sink    string
	Dests   []destState   // sorted by (Topic, Partition), unique
	Writers []writerState // sorted by Writer, unique
}

// destState is one (topic, partition) of the sink.
type destState struct {
	Topic      string
	Partition  int32
	LastWriter string // the writer of the last append that carried it
	LastWrite  int64  // when, in unix nanoseconds (the writer's clock)
	Ranges     []coverage.Range

	// encoded is Ranges as encodeObject writes them (delta varints), kept
	// in step by apply so that a checkpoint, which mostly appends past a
	// destination's last range, encodes only what it appended; nil when
	// not kept. Never written or read as such: the bytes are the same.
	encoded []byte
}

// writerState is a writer's recent checkpoint names in this sink.
type writerState struct {
	Writer    string
	LastWrite int64
	Names     []nameEntry // oldest first, unique
}

// nameEntry binds a checkpoint's name to what it carried.
type nameEntry struct {
	Name   string
	Sinks  uint64          // how many sinks the checkpoint wrote to
	Digest [digestLen]byte // durable.Digest of the whole checkpoint
}

// encodeObject returns o's bytes. o must be valid (as decodeObject would
// accept): the Tier only encodes what it decoded or merged.
func encodeObject(o *sinkObject) []byte {
	size := 64 + len(o.Sink)
	for _, d := range o.Dests {
		size += 32 + len(d.Topic) + len(d.LastWriter) + 4*len(d.Ranges)
	}
	for _, w := range o.Writers {
		size += 16 + len(w.Writer) + len(w.Names)*(24+digestLen)
	}
	b := make([]byte, 0, size)
	b = append(b, formatMagic...)
	b = append(b, formatVersion)
	b = appendString(b, o.Sink)
	b = binary.AppendUvarint(b, uint64(len(o.Dests)))
	for _, d := range o.Dests {
		b = appendString(b, d.Topic)
		b = binary.AppendUvarint(b, uint64(d.Partition))
		b = appendString(b, d.LastWriter)
		b = binary.AppendVarint(b, d.LastWrite)
		b = binary.AppendUvarint(b, uint64(len(d.Ranges)))
		if d.encoded != nil {
			b = append(b, d.encoded...)
		} else {
			b = appendRanges(b, 0, d.Ranges)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(o.Writers)))
	for _, w := range o.Writers {
		b = appendString(b, w.Writer)
		b = binary.AppendVarint(b, w.LastWrite)
		b = binary.AppendUvarint(b, uint64(len(w.Names)))
		for _, n := range w.Names {
			b = appendString(b, n.Name)
			b = binary.AppendUvarint(b, n.Sinks)
			b = append(b, n.Digest[:]...)
		}
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// appendRanges appends ranges as delta varints: each start from the end
// before it (prev for the first), then its length.
func appendRanges(b []byte, prev uint64, ranges []coverage.Range) []byte {
	for _, r := range ranges {
		b = binary.AppendUvarint(b, r.Start-prev)
		b = binary.AppendUvarint(b, r.End-r.Start)
		prev = r.End
	}
	return b
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// decodeObject parses and checks a sink's object. Every failure is
// ErrUnknownVersion or ErrCorruptObject with what was wrong, and where.
func decodeObject(b []byte) (*sinkObject, error) {
	const header = len(formatMagic) + 1
	if len(b) < header+4 {
		return nil, fmt.Errorf("%w: %d bytes, shorter than a header and checksum", ErrCorruptObject, len(b))
	}
	if string(b[:len(formatMagic)]) != formatMagic {
		return nil, fmt.Errorf("%w: no %q magic: not a sink object", ErrCorruptObject, formatMagic)
	}
	// The version comes before the checksum: a later version may lay its
	// trailer out otherwise.
	if v := b[len(formatMagic)]; v != formatVersion {
		return nil, fmt.Errorf("%w: version %d (this build reads %d)", ErrUnknownVersion, v, formatVersion)
	}
	body := b[:len(b)-4]
	if want, got := binary.BigEndian.Uint32(b[len(b)-4:]), crc32.Checksum(body, castagnoli); want != got {
		return nil, fmt.Errorf("%w: checksum %08x, content sums to %08x", ErrCorruptObject, want, got)
	}
	r := &reader{b: body, off: header}
	o := r.object()
	if r.err == nil && r.off != len(body) {
		r.fail("%d trailing bytes", len(body)-r.off)
	}
	if r.err != nil {
		return nil, r.err
	}
	return o, nil
}

// reader parses with a sticky error: after the first failure every read
// returns zero values, and the callers check err before they trust them.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: at byte %d: %s", ErrCorruptObject, r.off, fmt.Sprintf(format, args...))
	}
}

func (r *reader) uvarint(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.fail("truncated in %s", what)
		return 0
	case n < 0:
		r.fail("%s overflows 64 bits", what)
		return 0
	case n > 1 && r.b[r.off+n-1] == 0:
		r.fail("%s is not in its shortest form", what)
		return 0
	}
	r.off += n
	return v
}

func (r *reader) varint(what string) int64 {
	u := r.uvarint(what)
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

// count reads an element count, refusing one the remaining bytes cannot
// hold (each element takes at least minBytes), so that no corrupt count
// makes a large allocation.
func (r *reader) count(what string, minBytes int) int {
	n := r.uvarint(what)
	if r.err == nil && n > uint64((len(r.b)-r.off)/minBytes) {
		r.fail("%s %d does not fit the %d bytes left", what, n, len(r.b)-r.off)
		return 0
	}
	return int(n)
}

func (r *reader) string(what string) string {
	n := r.count(what+" length", 1)
	if r.err != nil {
		return ""
	}
	s := string(r.b[r.off : r.off+n])
	r.off += n
	return s
}

// stringAs is string, returning prev itself when the bytes are prev's: a
// sink's destinations mostly share a topic and a last writer, and one
// string each, not one per destination, spares a decode most of its
// allocations.
func (r *reader) stringAs(what, prev string) string {
	n := r.count(what+" length", 1)
	if r.err != nil {
		return ""
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	if string(b) == prev {
		return prev
	}
	return string(b)
}

func (r *reader) object() *sinkObject {
	o := &sinkObject{Sink: r.string("sink")}
	if err := (coverage.Destination{Sink: o.Sink, Topic: "t"}).Validate(); r.err == nil && err != nil {
		r.fail("sink: %v", err)
	}
	n := r.count("destination count", 5)
	o.Dests = make([]destState, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		var prev *destState
		if i > 0 {
			prev = &o.Dests[i-1]
		}
		d := r.dest(o.Sink, prev)
		if r.err == nil && i > 0 {
			if p := o.Dests[i-1]; compareDest(p.Topic, p.Partition, d.Topic, d.Partition) >= 0 {
				r.fail("destination %q/%d after %q/%d: out of order", d.Topic, d.Partition, p.Topic, p.Partition)
			}
		}
		o.Dests = append(o.Dests, d)
	}
	n = r.count("writer count", 3)
	for i := 0; i < n && r.err == nil; i++ {
		w := r.writer()
		if r.err == nil && i > 0 && o.Writers[i-1].Writer >= w.Writer {
			r.fail("writer %q after %q: out of order", w.Writer, o.Writers[i-1].Writer)
		}
		o.Writers = append(o.Writers, w)
	}
	return o
}

// dest reads a destination of sink; before is the one before it, if any.
func (r *reader) dest(sink string, before *destState) destState {
	var d destState
	if before != nil {
		d.Topic = r.stringAs("topic", before.Topic)
	} else {
		d.Topic = r.string("topic")
	}
	p := r.uvarint("partition")
	if r.err == nil && p > math.MaxInt32 {
		r.fail("partition %d past %d", p, math.MaxInt32)
	}
	d.Partition = int32(p)
	if err := (coverage.Destination{Sink: sink, Topic: d.Topic, Partition: d.Partition}).Validate(); r.err == nil && err != nil {
		r.fail("%v", err)
	}
	if before != nil {
		d.LastWriter = r.stringAs("last writer", before.LastWriter)
	} else {
		d.LastWriter = r.string("last writer")
	}
	if r.err == nil && d.LastWriter == "" {
		r.fail("topic %q partition %d has no last writer", d.Topic, d.Partition)
	}
	d.LastWrite = r.varint("last write")
	n := r.count("range count", 2)
	if r.err == nil && n == 0 {
		r.fail("topic %q partition %d has no ranges", d.Topic, d.Partition)
	}
	d.Ranges = make([]coverage.Range, 0, n)
	var prev uint64
	for i := 0; i < n && r.err == nil; i++ {
		gap, length := r.uvarint("range gap"), r.uvarint("range length")
		switch {
		case r.err != nil:
		case i > 0 && gap == 0:
			r.fail("topic %q partition %d: range %d touches the one before it", d.Topic, d.Partition, i)
		case length == 0:
			r.fail("topic %q partition %d: range %d is empty", d.Topic, d.Partition, i)
		case gap > coverage.MaxBatchEnd-prev || length > coverage.MaxBatchEnd-prev-gap:
			r.fail("topic %q partition %d: range %d ends past %d", d.Topic, d.Partition, i, uint64(coverage.MaxBatchEnd))
		default:
			start := prev + gap
			prev = start + length
			d.Ranges = append(d.Ranges, coverage.Range{Start: start, End: prev})
		}
	}
	return d
}

func (r *reader) writer() writerState {
	w := writerState{Writer: r.string("writer")}
	if r.err == nil && w.Writer == "" {
		r.fail("a writer with no name")
	}
	w.LastWrite = r.varint("writer's last write")
	n := r.count("name count", 2+digestLen)
	if r.err == nil && n == 0 {
		r.fail("writer %q has no names", w.Writer)
	}
	seen := make(map[string]bool, n)
	for i := 0; i < n && r.err == nil; i++ {
		e := nameEntry{Name: r.string("name"), Sinks: r.uvarint("sink count")}
		switch {
		case r.err != nil:
		case e.Name == "":
			r.fail("writer %q has an empty name", w.Writer)
		case seen[e.Name]:
			r.fail("writer %q has name %q twice", w.Writer, e.Name)
		case e.Sinks == 0:
			r.fail("writer %q name %q wrote to no sinks", w.Writer, e.Name)
		case len(r.b)-r.off < digestLen:
			r.fail("truncated in a digest")
		default:
			seen[e.Name] = true
			copy(e.Digest[:], r.b[r.off:])
			r.off += digestLen
			w.Names = append(w.Names, e)
		}
	}
	return w
}

func compareDest(topicA string, partA int32, topicB string, partB int32) int {
	if c := strings.Compare(topicA, topicB); c != 0 {
		return c
	}
	switch {
	case partA < partB:
		return -1
	case partA > partB:
		return 1
	}
	return 0
}
