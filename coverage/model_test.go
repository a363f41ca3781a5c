package coverage

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/internal/testseed"
)

// testSeed returns the seed for a randomized test, logged with the command
// that replays it (internal/testseed).
func testSeed(t *testing.T) uint64 { return testseed.Seed(t) }

// bitModel is the naive reference: one bool per batch id in [base, base+n).
type bitModel struct {
	base uint64
	bits []bool
}

func newBitModel(base uint64, n int) *bitModel { return &bitModel{base: base, bits: make([]bool, n)} }

func (m *bitModel) add(r Range) {
	for b := r.Start; b < r.End; b++ {
		m.bits[b-m.base] = true
	}
}

func (m *bitModel) count() uint64 {
	var n uint64
	for _, b := range m.bits {
		if b {
			n++
		}
	}
	return n
}

// runs returns the maximal runs of set bits as ranges: the normalized form a
// RangeSet must hold.
func (m *bitModel) runs() []Range {
	return runsOf(m.base, m.bits)
}

// minus returns the runs of m's bits that o lacks.
func (m *bitModel) minus(o *bitModel) []Range {
	diff := make([]bool, len(m.bits))
	for i := range diff {
		diff[i] = m.bits[i] && !o.bits[i]
	}
	return runsOf(m.base, diff)
}

func runsOf(base uint64, bits []bool) []Range {
	out := []Range{}
	for i := 0; i < len(bits); {
		if !bits[i] {
			i++
			continue
		}
		j := i
		for j < len(bits) && bits[j] {
			j++
		}
		out = append(out, Range{Start: base + uint64(i), End: base + uint64(j)})
		i = j
	}
	return out
}

// checkAgainstModel fails t unless s holds exactly the model's runs.
func checkAgainstModel(t testing.TB, what string, s *RangeSet, m *bitModel) {
	t.Helper()
	got, want := s.Ranges(), m.runs()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: set %v, model %v", what, got, want)
	}
	if s.Batches() != m.count() {
		t.Fatalf("%s: set counts %d batches, model %d", what, s.Batches(), m.count())
	}
	if s.Len() != len(want) {
		t.Fatalf("%s: Len %d, model has %d runs", what, s.Len(), len(want))
	}
}

// randomRange returns a range within [base, base+n), invalid one time in ten.
func randomRange(rng *rand.Rand, base uint64, n int) Range {
	a, b := uint64(rng.IntN(n)), uint64(rng.IntN(n))
	if rng.IntN(10) == 0 {
		return Range{Start: base + max(a, b), End: base + min(a, b)} // empty or inverted
	}
	if a > b {
		a, b = b, a
	}
	// Mostly short ranges, so holes survive.
	if rng.IntN(4) != 0 {
		b = min(a+uint64(rng.IntN(8))+1, uint64(n))
	}
	if a == b {
		b = a + 1
		if b > uint64(n) {
			a, b = uint64(n)-1, uint64(n)
		}
	}
	return Range{Start: base + a, End: base + b}
}

func TestRangeSetRandomizedAgainstBitset(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 0))
	const universe = 512
	for round := range 200 {
		var set, other RangeSet
		model, otherModel := newBitModel(0, universe), newBitModel(0, universe)
		for step := range 100 {
			what := fmt.Sprintf("round %d step %d", round, step)
			switch op := rng.IntN(10); {
			case op < 6:
				r := randomRange(rng, 0, universe)
				before := set.Clone()
				err := set.Add(r)
				if r.Validate() != nil {
					if err == nil {
						t.Fatalf("%s: invalid %s accepted", what, r)
					}
					if !set.Equal(&before) {
						t.Fatalf("%s: refused %s changed the set", what, r)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: add %s: %v", what, r, err)
				}
				model.add(r)
			case op < 8:
				r := randomRange(rng, 0, universe)
				if r.Validate() == nil {
					_ = other.Add(r)
					otherModel.add(r)
				}
			case op < 9:
				set.Union(&other)
				for _, r := range otherModel.runs() {
					model.add(r)
				}
			default:
				want := otherModel.minus(model)
				for name, gaps := range map[string]RangeSet{"search": gapsBySearch(&other, &set), "walk": gapsByWalk(&other, &set), "Gaps": Gaps(&other, &set)} {
					if got := gaps.Ranges(); !slices.Equal(got, want) {
						t.Fatalf("%s: gaps by %s (%v, %v) = %v, model %v", what, name, other.String(), set.String(), got, want)
					}
				}
			}
			checkAgainstModel(t, what, &set, model)
			b := uint64(rng.IntN(universe))
			if set.Contains(b) != model.bits[b] {
				t.Fatalf("%s: Contains(%d) = %v, model %v", what, b, set.Contains(b), model.bits[b])
			}
		}
	}
}
