package recovery

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// TestReferenceHolesModel: ReferenceHoles is exactly a naive model's holes
// (batch by batch: what the reference lacks between the lowest and highest
// batch of its own coverage, the sinks' hull and a non-empty extent), and an
// extent only ever widens where holes are looked for: every hole found
// without it is found with it. Random reference coverage, hulls and
// extents over [0,40).
func TestReferenceHolesModel(t *testing.T) {
	seed := testSeed(t)
	r := rand.New(rand.NewPCG(seed, 1))
	for round := range 3000 {
		ref := new(coverage.RangeSet)
		bits := map[uint64]bool{}
		for range r.IntN(4) {
			s := r.Uint64N(40)
			e := s + 1 + r.Uint64N(8)
			_ = ref.Add(rg(s, e))
			for b := s; b < e; b++ {
				bits[b] = true
			}
		}
		var sinks coverage.Range
		if r.IntN(2) == 0 {
			s := r.Uint64N(40)
			sinks = rg(s, s+1+r.Uint64N(10))
		}
		var extent coverage.Extent
		if r.IntN(4) != 0 {
			extent.End = r.Uint64N(50)
			extent.Start = r.Uint64N(extent.End + 1)
		}
		want := naiveHoles(bits, sinks, extent)
		got, err := ReferenceHoles(ref, sinks, extent)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if !slices.Equal(got.Ranges(), want) {
			t.Fatalf("round %d: ref %v sinks %v extent %+v: holes %v, want %v", round, ref.Ranges(), sinks, extent, got.Ranges(), want)
		}
		without, _ := ReferenceHoles(ref, sinks, coverage.Extent{})
		for h := range without.All() {
			if !got.ContainsRange(h) {
				t.Fatalf("round %d: extent %+v hides hole %v (holes with it: %v)", round, extent, h, got.Ranges())
			}
		}
	}
}

// naiveHoles is the model: the batches in the span of ref's bits, sinks and
// a non-empty extent that ref lacks, as maximal ranges.
func naiveHoles(ref map[uint64]bool, sinks coverage.Range, e coverage.Extent) []coverage.Range {
	in := map[uint64]bool{}
	for b := range ref {
		in[b] = true
	}
	for b := sinks.Start; b < sinks.End; b++ {
		in[b] = true
	}
	for b := e.Start; b < e.End; b++ {
		in[b] = true
	}
	if len(in) == 0 {
		return nil
	}
	lo, hi := uint64(1<<63), uint64(0)
	for b := range in {
		lo, hi = min(lo, b), max(hi, b+1)
	}
	var out []coverage.Range
	for b := lo; b < hi; b++ {
		if ref[b] {
			continue
		}
		if n := len(out); n > 0 && out[n-1].End == b {
			out[n-1].End++
		} else {
			out = append(out, rg(b, b+1))
		}
	}
	return out
}
