package local

import (
	"bytes"
	"cmp"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

func compareTuples(a, b coverage.Destination, sa, sb uint64) int {
	if c := cmp.Compare(a.Sink, b.Sink); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Partition, b.Partition); c != 0 {
		return c
	}
	return cmp.Compare(sa, sb)
}

// FuzzKeyEncoding checks that range keys round-trip, sort as their tuples do,
// and that one destination's prefix never matches another destination's keys
// (sink "a" topic "b\x00c" against sink "a\x00b" topic "c", say).
//
//	go test ./local -run '^$' -fuzz FuzzKeyEncoding -fuzztime 60s
func FuzzKeyEncoding(f *testing.F) {
	f.Add("a", "b\x00c", int32(0), uint64(1), "a\x00b", "c", int32(0), uint64(1))
	f.Add("raw", "orders", int32(1), uint64(5), "raw", "orders", int32(-1), uint64(5))
	f.Add("a", "", int32(0), uint64(0), "a\x00", "\x01", int32(0), uint64(0))
	f.Add("x\x00\xff", "y", int32(2), uint64(1<<63), "x", "\x00\xffy", int32(2), uint64(1))
	f.Fuzz(func(t *testing.T, sinkA, topicA string, partA int32, startA uint64, sinkB, topicB string, partB int32, startB uint64) {
		a := coverage.Destination{Sink: sinkA, Topic: topicA, Partition: partA}
		b := coverage.Destination{Sink: sinkB, Topic: topicB, Partition: partB}
		ka, kb := rangeKey(nil, kindCovered, a, startA), rangeKey(nil, kindCovered, b, startB)
		for _, c := range []struct {
			key   []byte
			d     coverage.Destination
			start uint64
		}{{ka, a, startA}, {kb, b, startB}} {
			kind, d, start, err := decodeRangeKey(c.key)
			if err != nil || kind != kindCovered || d != c.d || start != c.start {
				t.Fatalf("round trip of %+v/%d: %v %+v %d %v", c.d, c.start, kind, d, start, err)
			}
		}
		if got, want := bytes.Compare(ka, kb), compareTuples(a, b, startA, startB); got != want {
			t.Fatalf("keys compare %d, tuples %d: %+v/%d vs %+v/%d", got, want, a, startA, b, startB)
		}
		if a != b {
			if bytes.HasPrefix(kb, destinationPrefix(nil, kindCovered, a)) || bytes.HasPrefix(ka, destinationPrefix(nil, kindCovered, b)) {
				t.Fatalf("prefixes of %+v and %+v overlap", a, b)
			}
		}
	})
}
