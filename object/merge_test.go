package object

import (
	"flag"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

var unionSeed = flag.Uint64("union-seed", 0, "seed for TestUnionIntoMatchesNormalize (0: from the clock)")

// TestUnionIntoMatchesNormalize: merging a checkpoint's ranges into a
// destination's, in place, gives the union of both as coverage.Normalize
// computes it, whether the new ranges lie past the old, among them or
// before them, and never changes the checkpoint's ranges.
func TestUnionIntoMatchesNormalize(t *testing.T) {
	seed := *unionSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -union-seed %d)", seed, seed)
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
