package object

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"strings"
)

// The formats of the deltas layout, version 1. Both frame sink objects
// (format.go's encoding, each with its own magic and checksum, writers
// empty) in sink-name order:
//
//	delta: "CVMD" version=1 writer name digest(16 bytes) created(unix ns, signed)
//	       sinks: count (>= 1), then per sink: length, sink object
//	       CRC-32C of everything before it, 4 bytes big-endian
//	base:  "CVMB" version=1 topic group
//	       sinks: count, then per sink: length, sink object
//	       CRC-32C of everything before it, 4 bytes big-endian
//
// A delta is one checkpoint of one writer, every sink of it: written once,
// never changed, so a checkpoint lands whole or not at all. A base is the
// folded coverage of one topic's partitions [group*GroupSize,
// (group+1)*GroupSize), every sink of them.
const (
	deltaMagic = "CVMD"
	baseMagic  = "CVMB"
	frameVer   = 1
)

// delta is one checkpoint, decoded.
type delta struct {
	Writer, Name string
	Digest       [digestLen]byte
	Created      int64
	Sinks        []*sinkObject // sorted by Sink, unique, each non-empty
}

// base is one partition group's folded coverage, decoded.
type base struct {
	Topic string
	Group int32
	Sinks []*sinkObject // sorted by Sink, unique
}

func appendFramed(b []byte, sinks []*sinkObject) []byte {
	b = binary.AppendUvarint(b, uint64(len(sinks)))
	for _, o := range sinks {
		enc := encodeObject(o)
		b = binary.AppendUvarint(b, uint64(len(enc)))
		b = append(b, enc...)
	}
	return b
}

func sealed(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func encodeDelta(d *delta) []byte {
	b := append([]byte(deltaMagic), frameVer)
	b = appendString(b, d.Writer)
	b = appendString(b, d.Name)
	b = append(b, d.Digest[:]...)
	b = binary.AppendVarint(b, d.Created)
	return sealed(appendFramed(b, d.Sinks))
}

func encodeBase(g *base) []byte {
	b := append([]byte(baseMagic), frameVer)
	b = appendString(b, g.Topic)
	b = binary.AppendUvarint(b, uint64(g.Group))
	return sealed(appendFramed(b, g.Sinks))
}

// openFrame checks magic, version and checksum, and returns a reader on
// the body after the header.
func openFrame(b []byte, magic, what string) (*reader, error) {
	header := len(magic) + 1
	if len(b) < header+4 {
		return nil, fmt.Errorf("%w: %s of %d bytes, shorter than a header and checksum", ErrCorruptObject, what, len(b))
	}
	if string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: no %q magic: not a %s", ErrCorruptObject, magic, what)
	}
	if v := b[len(magic)]; v != frameVer {
		return nil, fmt.Errorf("%w: %s version %d (this build reads %d)", ErrUnknownVersion, what, v, frameVer)
	}
	body := b[:len(b)-4]
	if want, got := binary.BigEndian.Uint32(b[len(b)-4:]), crc32.Checksum(body, castagnoli); want != got {
		return nil, fmt.Errorf("%w: %s checksum %08x, content sums to %08x", ErrCorruptObject, what, want, got)
	}
	return &reader{b: body, off: header}, nil
}

// framed reads the sink objects of a delta or base; keep says whether a
// destination belongs in it.
func (r *reader) framed(keep func(topic string, partition int32) error) []*sinkObject {
	n := r.count("sink count", 2)
	var out []*sinkObject
	for i := 0; i < n && r.err == nil; i++ {
		size := r.count("sink object length", 1)
		if r.err != nil {
			break
		}
		o, err := decodeObject(r.b[r.off : r.off+size])
		if err != nil {
			r.fail("sink object %d: %v", i, err)
			break
		}
		r.off += size
		if len(o.Writers) > 0 {
			r.fail("sink %q carries checkpoint names, which only sink objects do", o.Sink)
		}
		if i > 0 && out[i-1].Sink >= o.Sink {
			r.fail("sink %q after %q: out of order", o.Sink, out[i-1].Sink)
		}
		for _, ds := range o.Dests {
			if err := keep(ds.Topic, ds.Partition); err != nil && r.err == nil {
				r.fail("sink %q: %v", o.Sink, err)
			}
		}
		out = append(out, o)
	}
	return out
}

func (r *reader) done() error {
	if r.err == nil && r.off != len(r.b) {
		r.fail("%d trailing bytes", len(r.b)-r.off)
	}
	return r.err
}

func decodeDelta(b []byte) (*delta, error) {
	r, err := openFrame(b, deltaMagic, "delta")
	if err != nil {
		return nil, err
	}
	d := &delta{Writer: r.string("writer"), Name: r.string("name")}
	if r.err == nil && (d.Writer == "" || d.Name == "") {
		r.fail("a delta needs a writer and a name")
	}
	if r.err == nil && len(r.b)-r.off < digestLen {
		r.fail("truncated in the digest")
	}
	if r.err == nil {
		copy(d.Digest[:], r.b[r.off:])
		r.off += digestLen
	}
	d.Created = r.varint("created")
	d.Sinks = r.framed(func(string, int32) error { return nil })
	if r.err == nil && len(d.Sinks) == 0 {
		r.fail("a delta with no sinks")
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return d, nil
}

func decodeBase(b []byte) (*base, error) {
	r, err := openFrame(b, baseMagic, "base")
	if err != nil {
		return nil, err
	}
	g := &base{Topic: r.string("topic")}
	n := r.uvarint("group")
	if r.err == nil && n > math.MaxInt32/GroupSize {
		r.fail("group %d past the last partition", n)
	}
	g.Group = int32(n)
	g.Sinks = r.framed(func(topic string, partition int32) error {
		if topic != g.Topic || partition/GroupSize != g.Group {
			return fmt.Errorf("%q/%d does not belong in the base of %q group %d", topic, partition, g.Topic, g.Group)
		}
		return nil
	})
	if err := r.done(); err != nil {
		return nil, err
	}
	return g, nil
}

// sinkIn returns g's object of sink, added empty where it has none.
func sinkIn(sinks *[]*sinkObject, sink string) *sinkObject {
	i, ok := slices.BinarySearchFunc(*sinks, sink, func(o *sinkObject, s string) int { return strings.Compare(o.Sink, s) })
	if !ok {
		*sinks = slices.Insert(*sinks, i, &sinkObject{Sink: sink})
	}
	return (*sinks)[i]
}
