package object

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/testseed"
)

// TestUnionIntoMatchesNormalize: merging a checkpoint's ranges into a
// destination's, in place, gives the union of both as coverage.Normalize
// computes it, whether the new ranges lie past the old, among them or
// before them, and never changes the checkpoint's ranges.
func TestUnionIntoMatchesNormalize(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	random := func(n int, from, span uint64) []coverage.Range {
		rs := make([]coverage.Range, n)
		for i := range rs {
			start := from + rng.Uint64N(span)
			rs[i] = coverage.Range{Start: start, End: start + 1 + rng.Uint64N(5)}
		}
		return coverage.Normalize(rs)
	}
	for i := range 20000 {
		a := random(rng.IntN(10), 0, 80)
		b := random(rng.IntN(4), uint64(rng.IntN(100)), 1+uint64(rng.IntN(60)))
		want := coverage.Normalize(slices.Concat(a, b))
		a = slices.Grow(a, rng.IntN(4)) // room to append in place, or not
		before, bBefore := slices.Clone(a), slices.Clone(b)
		got := unionInto(a, b)
		if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Fatalf("case %d: unionInto(%v, %v) = %v, want %v", i, before, bBefore, got, want)
		}
		if !slices.Equal(b, bBefore) {
			t.Fatalf("case %d: the checkpoint's ranges changed: %v became %v", i, bBefore, b)
		}
	}
}

// TestKeptEncodingMatchesFresh: after random checkpoints (appends past a
// destination's last range, merges among its ranges, new destinations),
// the object's bytes with the encodings apply keeps are the bytes of the
// same object encoded afresh, and decode to the same ranges.
func TestKeptEncodingMatchesFresh(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	for round := range 200 {
		o := &sinkObject{Sink: "lake"}
		next := make([]uint64, 4)
		for i := range 50 {
			p := &part{writer: "w", name: fmt.Sprint(i), sinks: 1}
			for part := range int32(4) {
				if rng.IntN(3) == 0 {
					continue
				}
				var rs []coverage.Range
				for range 1 + rng.IntN(3) {
					start := next[part] + rng.Uint64N(4) // mostly past the last, sometimes touching it
					if rng.IntN(5) == 0 {
						start = rng.Uint64N(next[part] + 1) // among the old ranges
					}
					rs = append(rs, coverage.Range{Start: start, End: start + 1 + rng.Uint64N(3)})
					next[part] = max(next[part], rs[len(rs)-1].End)
				}
				p.dests = append(p.dests, coverage.DestinationRanges{Destination: coverage.Destination{Sink: "lake", Topic: "t", Partition: part}, Ranges: coverage.Normalize(rs)})
			}
			o.apply(p, int64(i))
			kept := encodeObject(o)
			fresh := *o
			fresh.Dests = slices.Clone(o.Dests)
			for j := range fresh.Dests {
				fresh.Dests[j].encoded = nil
			}
			if want := encodeObject(&fresh); !bytes.Equal(kept, want) {
				t.Fatalf("round %d, checkpoint %d: the kept encoding differs from a fresh one", round, i)
			}
			back, err := decodeObject(kept)
			if err != nil {
				t.Fatalf("round %d, checkpoint %d: %v", round, i, err)
			}
			for j, d := range back.Dests {
				if !slices.Equal(d.Ranges, o.Dests[j].Ranges) {
					t.Fatalf("round %d, checkpoint %d: %v decoded as %v", round, i, o.Dests[j].Ranges, d.Ranges)
				}
			}
		}
	}
}
