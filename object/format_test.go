package object

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/covmirror/covmirror/coverage"
)

func sampleObject() *sinkObject {
	return &sinkObject{
		Sink: "lake",
		Dests: []destState{
			{Topic: "orders", Partition: 0, LastWriter: "pod-a", LastWrite: 1700000000e9, Ranges: []coverage.Range{{Start: 0, End: 10}, {Start: 11, End: 12}, {Start: 1 << 40, End: coverage.MaxBatchEnd}}},
			{Topic: "orders", Partition: 3, LastWriter: "pod-b", LastWrite: -5, Ranges: []coverage.Range{{Start: 7, End: 8}}},
			{Topic: "users", Partition: 1, LastWriter: "pod-a", LastWrite: 0, Ranges: []coverage.Range{{Start: 100, End: 200}}},
		},
		Writers: []writerState{
			{Writer: "pod-a", LastWrite: 42, Names: []nameEntry{{Name: "ck-1", Sinks: 2, Digest: [16]byte{1, 2, 3}}, {Name: "ck-2", Sinks: 1}}},
			{Writer: "pod-b", LastWrite: 43, Names: []nameEntry{{Name: "ck-1", Sinks: 1, Digest: [16]byte{15: 9}}}},
		},
	}
}

func TestFormatRoundTrip(t *testing.T) {
	for _, o := range []*sinkObject{{Sink: "raw"}, sampleObject()} {
		b := encodeObject(o)
		got, err := decodeObject(b)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		if !reflect.DeepEqual(normalize(got), normalize(o)) {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, o)
		}
		if !bytes.Equal(encodeObject(got), b) {
			t.Fatal("encode(decode(b)) != b")
		}
	}
}

// normalize makes nil and empty slices alike for DeepEqual.
func normalize(o *sinkObject) *sinkObject {
	c := *o
	if len(c.Dests) == 0 {
		c.Dests = nil
	}
	if len(c.Writers) == 0 {
		c.Writers = nil
	}
	return &c
}

// reseal replaces b's checksum with the right one, so that a test reaches
// the checks behind it.
func reseal(b []byte) []byte {
	body := b[:len(b)-4]
	return binary.BigEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, castagnoli))
}

func TestFormatRejects(t *testing.T) {
	good := encodeObject(sampleObject())
	mutate := func(f func(o *sinkObject)) []byte {
		o := sampleObject()
		f(o)
		return encodeObject(o)
	}
	flipped := append([]byte(nil), good...)
	flipped[len(flipped)/2] ^= 0x10
	newer := append([]byte(nil), good...)
	newer[4] = 2
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrCorruptObject},
		{"no magic", append([]byte("XXXX"), good[4:]...), ErrCorruptObject},
		{"unknown version", newer, ErrUnknownVersion},
		{"bad checksum", flipped, ErrCorruptObject},
		{"truncated", good[:len(good)-7], ErrCorruptObject},
		{"truncated, resealed", reseal(append(append([]byte(nil), good[:len(good)-10]...), 0, 0, 0, 0)), ErrCorruptObject},
		{"trailing bytes", reseal(append(append(append([]byte(nil), good[:len(good)-4]...), 0), 0, 0, 0, 0)), ErrCorruptObject},
		{"overlapping ranges", mutate(func(o *sinkObject) { o.Dests[0].Ranges[1] = coverage.Range{Start: 5, End: 12} }), ErrCorruptObject},
		{"touching ranges", mutate(func(o *sinkObject) { o.Dests[0].Ranges[1] = coverage.Range{Start: 10, End: 12} }), ErrCorruptObject},
		{"empty range", mutate(func(o *sinkObject) { o.Dests[0].Ranges[1] = coverage.Range{Start: 11, End: 11} }), ErrCorruptObject},
		{"past MaxBatchEnd", mutate(func(o *sinkObject) { o.Dests[0].Ranges[2].End = coverage.MaxBatchEnd + 1 }), ErrCorruptObject},
		{"destinations unsorted", mutate(func(o *sinkObject) { o.Dests[0], o.Dests[1] = o.Dests[1], o.Dests[0] }), ErrCorruptObject},
		{"destination twice", mutate(func(o *sinkObject) { o.Dests[1] = o.Dests[0] }), ErrCorruptObject},
		{"no ranges", mutate(func(o *sinkObject) { o.Dests[1].Ranges = nil }), ErrCorruptObject},
		{"writers unsorted", mutate(func(o *sinkObject) { o.Writers[0], o.Writers[1] = o.Writers[1], o.Writers[0] }), ErrCorruptObject},
		{"name twice", mutate(func(o *sinkObject) { o.Writers[0].Names[1].Name = "ck-1" }), ErrCorruptObject},
		{"invalid sink", mutate(func(o *sinkObject) { o.Sink = "a\nb" }), ErrCorruptObject},
		{"negative partition", mutate(func(o *sinkObject) { o.Dests[2].Partition = -1 }), ErrCorruptObject},
	}
	for _, c := range cases {
		if _, err := decodeObject(c.b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	// A varint in a longer form than it needs is refused: one encoding per
	// content.
	long := append([]byte(formatMagic+"\x01"), 0x84, 0x00, 'l', 'a', 'k', 'e', 0, 0)
	if _, err := decodeObject(reseal(append(long, 0, 0, 0, 0))); !errors.Is(err, ErrCorruptObject) {
		t.Errorf("non-minimal varint: %v", err)
	}
	if !errors.Is(ErrCorruptObject, coverage.ErrCorrupt) {
		t.Error("ErrCorruptObject does not match coverage.ErrCorrupt")
	}
}

// FuzzDecode: decoding never panics, and whatever decodes encodes back to
// the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(encodeObject(sampleObject()))
	f.Add(encodeObject(&sinkObject{Sink: "raw"}))
	f.Add([]byte(formatMagic + "\x01"))
	body := encodeObject(sampleObject())
	f.Add(body[len(formatMagic)+1 : len(body)-4])
	f.Fuzz(func(t *testing.T, b []byte) {
		roundTrip(t, b)
		// Most inputs stop at the checksum: also parse b as a body, with
		// its header and a right checksum, to reach the parser behind it.
		sealed := append([]byte(formatMagic+"\x01"), b...)
		roundTrip(t, binary.BigEndian.AppendUint32(sealed, crc32.Checksum(sealed, castagnoli)))
	})
}

func roundTrip(t *testing.T, b []byte) {
	o, err := decodeObject(b)
	if err != nil {
		if !errors.Is(err, ErrCorruptObject) && !errors.Is(err, ErrUnknownVersion) {
			t.Fatalf("unclassified error: %v", err)
		}
		return
	}
	if again := encodeObject(o); !bytes.Equal(again, b) {
		t.Fatalf("encode(decode(b)) differs:\n%x\n%x", again, b)
	}
}

// BenchmarkObjectBytesPerRange sizes a sink's object of one partition with
// a million ranges of small gaps and lengths, beside roaring64's portable
// serialization of the same batch ids (run-optimized).
func BenchmarkObjectBytesPerRange(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 1_000_000
	ranges := make([]coverage.Range, 0, n)
	var prev uint64
	for range n {
		start := prev + 1 + rng.Uint64N(100)
		prev = start + 1 + rng.Uint64N(1000)
		ranges = append(ranges, coverage.Range{Start: start, End: prev})
	}
	o := &sinkObject{Sink: "lake", Dests: []destState{{Topic: "orders", LastWriter: "pod-a", LastWrite: 1, Ranges: ranges}}}
	var size int
	for b.Loop() {
		size = len(encodeObject(o))
	}
	bm := roaring64.New()
	for _, r := range ranges {
		bm.AddRange(r.Start, r.End)
	}
	bm.RunOptimize()
	b.ReportMetric(float64(size)/n, "bytes/range")
	b.ReportMetric(float64(bm.GetSerializedSizeInBytes())/n, "roaring64-bytes/range")
}
