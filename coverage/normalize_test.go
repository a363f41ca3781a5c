package coverage

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/internal/testseed"
)

// TestNormalizeMatchesRangeSet: Normalize gives what a RangeSet built from
// the same ranges holds, for random lists with overlaps, touches,
// duplicates and invalid ranges; and it never modifies its input.
func TestNormalizeMatchesRangeSet(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, seed))
	for i := range 20000 {
		n := rng.IntN(12)
		in := make([]Range, n)
		span := uint64(1 + rng.IntN(60))
		for j := range in {
			start := rng.Uint64N(span)
			in[j] = Range{Start: start, End: start + rng.Uint64N(8)}
			if rng.IntN(10) == 0 {
				in[j].End = start - min(start, rng.Uint64N(3)) // empty or inverted
			}
		}
		if rng.IntN(3) == 0 {
			slices.SortFunc(in, func(a, b Range) int { return int(a.Start) - int(b.Start) })
		}
		before := slices.Clone(in)
		var want RangeSet
		for _, r := range in {
			_ = want.Add(r)
		}
		got := Normalize(in)
		if !slices.Equal(in, before) {
			t.Fatalf("case %d: Normalize modified its input: %v became %v", i, before, in)
		}
		if !slices.Equal(got, want.Ranges()) && !(len(got) == 0 && want.Len() == 0) {
			t.Fatalf("case %d: Normalize(%v) = %v, a RangeSet holds %v", i, before, got, want.Ranges())
		}
		if !IsNormalized(got) {
			t.Fatalf("case %d: Normalize(%v) = %v is not normalized", i, before, got)
		}
	}
}
