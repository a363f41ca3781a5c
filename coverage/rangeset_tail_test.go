package coverage

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// tailWorld drives a set and its clones the way a stream does: mostly
// in-order additions at or past the last range (extending it, touching it,
// or leaving a hole), interleaved with random additions and clones, each
// set checked against its own bitset model after every step. Clones must
// stay independent of the set they came from, in both directions.
type tailWorld struct {
	base     uint64
	universe int
	sets     []*RangeSet
	models   []*bitModel
}

func newTailWorld(base uint64, universe int) *tailWorld {
	return &tailWorld{base: base, universe: universe, sets: []*RangeSet{new(RangeSet)}, models: []*bitModel{newBitModel(base, universe)}}
}

// step applies one operation chosen by op to set which (modulo the number
// of sets), with a and b as its arguments, and checks every set.
func (w *tailWorld) step(t testing.TB, op, which, a, b int) {
	t.Helper()
	i := which % len(w.sets)
	s, m := w.sets[i], w.models[i]
	var r Range
	switch op % 8 {
	case 0, 1, 2, 3, 4: // at or past the tail: overlap, touch, or hole of a few
		from := s.tailFrom(w.base, a%4, b)
		r = Range{Start: from, End: from + uint64(b%5) + 1}
	case 5: // anywhere up to a little past the tail: mostly short, so that
		// holes survive; now and then wide enough to swallow tens of ranges
		lo, n := uint64(a)%(s.tailFrom(w.base, 1, 0)-w.base+8), uint64(b%8)
		if b%16 == 0 {
			n = uint64(b % 200)
		}
		r = Range{Start: w.base + lo, End: w.base + lo + n + 1}
	case 6: // clone, at most a few live sets so that each keeps being used
		if len(w.sets) < 4 {
			c := s.Clone()
			cm := newBitModel(w.base, w.universe)
			copy(cm.bits, m.bits)
			w.sets, w.models = append(w.sets, &c), append(w.models, cm)
		}
		w.check(t, fmt.Sprintf("clone of set %d", i))
		return
	case 7: // union of another set into this one
		j := b % len(w.sets)
		if j != i {
			s.Union(w.sets[j])
			for _, run := range w.models[j].runs() {
				m.add(run)
			}
		}
		w.checkSet(t, fmt.Sprintf("union of set %d", j), i)
		return
	}
	if r.Start < w.base || r.End <= r.Start || r.End > w.base+uint64(w.universe) {
		return // past the model's universe (or wrapped around past math.MaxUint64)
	}
	before := s.Clone()
	newly := m.count()
	m.add(r)
	newly = m.count() - newly
	merge, err := s.MergeRange(r, nil)
	if err != nil || merge.Added != newly || merge.Merged.Start > r.Start || merge.Merged.End < r.End || !s.ContainsRange(merge.Merged) {
		t.Fatalf("set %d: add %s to %v: %+v, %v; model added %d", i, r, before.String(), merge, err, newly)
	}
	for _, old := range merge.Replaced {
		if !containsExactly(&before, old) || old.Start < merge.Merged.Start || old.End > merge.Merged.End {
			t.Fatalf("set %d: add %s to %v reports replacing %s", i, r, before.String(), old)
		}
	}
	var fresh uint64
	for _, f := range merge.Fresh(r, nil) {
		if before.Contains(f.Start) || before.Contains(f.End-1) {
			t.Fatalf("set %d: add %s to %v: fresh %s was covered", i, r, before.String(), f)
		}
		fresh += f.Len()
	}
	if fresh != newly {
		t.Fatalf("set %d: add %s to %v: fresh parts cover %d, model added %d", i, r, before.String(), fresh, newly)
	}
	w.checkSet(t, fmt.Sprintf("add %s", r), i)
}

// tailFrom returns where an in-order addition starts: inside the last range
// (mode 0), at its end (1), or a hole of hole%3+1 batches past it (2, 3).
func (s *RangeSet) tailFrom(base uint64, mode, hole int) uint64 {
	last, ok := s.Last()
	switch {
	case !ok:
		return base
	case mode == 0:
		return last.Start + (last.End-last.Start)/2
	case mode == 1:
		return last.End
	}
	return last.End + uint64(hole%3) + 1
}

func containsExactly(s *RangeSet, r Range) bool {
	for q := range s.All() {
		if q == r {
			return true
		}
	}
	return false
}

func (w *tailWorld) check(t testing.TB, what string) {
	t.Helper()
	for i := range w.sets {
		w.checkSet(t, what, i)
	}
}

func (w *tailWorld) checkSet(t testing.TB, what string, i int) {
	t.Helper()
	s := w.sets[i]
	checkAgainstModel(t, fmt.Sprintf("%s: set %d", what, i), s, w.models[i])
	if err := layoutError(s); err != nil {
		t.Fatalf("%s: set %d: %v", what, i, err)
	}
	first, okFirst := s.First()
	last, okLast := s.Last()
	if s.Len() == 0 {
		if okFirst || okLast {
			t.Fatalf("%s: set %d is empty but has First %s or Last %s", what, i, first, last)
		}
		return
	}
	var want []Range
	for r := range s.All() {
		want = append(want, r) // equal to the model's runs, checked above
	}
	if first != want[0] || last != want[len(want)-1] {
		t.Fatalf("%s: set %d: First %s and Last %s, model %s and %s", what, i, first, last, want[0], want[len(want)-1])
	}
}

// TestRangeSetTailAddsAgainstBitset runs long streams, long enough for the
// set to hold hundreds of ranges, against the model.
func TestRangeSetTailAddsAgainstBitset(t *testing.T) {
	rng := rand.New(rand.NewPCG(testSeed(t), 1))
	const universe = 12000
	for round := range 8 {
		base := uint64(0)
		if round%3 == 2 {
			base = math.MaxUint64 - universe
		}
		w := newTailWorld(base, universe)
		for step := range 4000 {
			op := rng.IntN(5) // mostly in order
			switch p := rng.IntN(100); {
			case p < 10:
				op = 5
			case p < 12:
				op = 6
			case p < 13:
				op = 7
			}
			which := 0 // mostly the first set, so that it grows large
			if rng.IntN(2) == 0 {
				which = rng.IntN(8)
			}
			w.step(t, op, which, rng.IntN(universe), rng.IntN(universe))
			if step%8 == 0 {
				w.check(t, "every set") // clones stay independent
			}
			if t.Failed() {
				t.Fatalf("round %d step %d", round, step)
			}
		}
		most := 0
		for _, s := range w.sets {
			most = max(most, s.Len())
		}
		if most < 256 {
			t.Fatalf("round %d: at most %d ranges, too few to exercise a large set", round, most)
		}
	}
}

// FuzzRangeSetTail decodes data as the operations of tailWorld.step.
//
//	go test ./coverage -run '^$' -fuzz FuzzRangeSetTail -fuzztime 60s
func FuzzRangeSetTail(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 0, 1, 0, 3, 0, 2, 0, 2, 0, 2, 0, 5, 0, 6, 0, 0, 0, 0, 0, 3, 1, 1, 0, 4, 0, 0, 1, 2, 0, 1, 0}, uint64(0))
	f.Add([]byte{2, 0, 1, 0, 6, 0, 6, 0, 0, 0, 0, 0, 5, 1, 200, 3, 7, 0, 7, 0, 1, 0, 1, 0, 3, 1, 2, 0, 9, 0}, uint64(math.MaxUint64-2000))
	f.Fuzz(func(t *testing.T, data []byte, base uint64) {
		const universe = 2000
		base = min(base, math.MaxUint64-universe)
		w := newTailWorld(base, universe)
		for len(data) >= 6 {
			a, b := int(data[2])|int(data[3])<<8, int(data[4])|int(data[5])<<8
			w.step(t, int(data[0]), int(data[1]), a, b)
			data = data[6:]
		}
		w.check(t, "every set at the end")
	})
}
