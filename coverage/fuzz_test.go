package coverage

import (
	"math"
	"slices"
	"testing"
)

// FuzzRangeSet decodes data as operations on two sets and checks them against
// the bitset model after every step. base moves the whole universe, so ids
// near math.MaxUint64 are exercised too.
//
//	go test ./coverage -run '^$' -fuzz FuzzRangeSet -fuzztime 60s
func FuzzRangeSet(f *testing.F) {
	f.Add([]byte{0, 1, 3, 0, 4, 6, 0, 2, 4}, uint64(0))
	f.Add([]byte{0, 10, 20, 1, 5, 25, 2, 0, 0, 3, 0, 0}, uint64(1<<40))
	f.Add([]byte{0, 255, 1, 0, 0, 255, 1, 3, 9}, uint64(math.MaxUint64-300))
	f.Fuzz(func(t *testing.T, data []byte, base uint64) {
		const universe = 256
		base = min(base, math.MaxUint64-universe)
		var set, other RangeSet
		model, otherModel := newBitModel(base, universe), newBitModel(base, universe)
		for len(data) >= 3 {
			op, a, b := data[0]%4, uint64(data[1]), uint64(data[2])
			data = data[3:]
			r := Range{Start: base + a, End: base + b}
			switch op {
			case 0:
				before := set.Clone()
				m, err := set.MergeRange(r, nil)
				if r.Validate() != nil {
					if err == nil || !set.Equal(&before) {
						t.Fatalf("invalid %s: err %v, set %v -> %v", r, err, before.String(), set.String())
					}
					continue
				}
				newlyCovered := model.count()
				model.add(r)
				newlyCovered = model.count() - newlyCovered
				if err != nil || m.Added != newlyCovered || m.Merged.Start > r.Start || m.Merged.End < r.End {
					t.Fatalf("add %s to %v: %+v, %v; model added %d", r, before.String(), m, err, newlyCovered)
				}
				fresh := m.Fresh(r, nil)
				var freshBatches uint64
				for i, f := range fresh {
					if f.Validate() != nil || f.Start < r.Start || f.End > r.End || before.Contains(f.Start) || before.Contains(f.End-1) || (i > 0 && f.Start <= fresh[i-1].End) {
						t.Fatalf("add %s to %v: fresh part %s of %v is wrong", r, before.String(), f, fresh)
					}
					freshBatches += f.Len()
				}
				if freshBatches != newlyCovered {
					t.Fatalf("add %s to %v: fresh parts %v cover %d batches, model added %d", r, before.String(), fresh, freshBatches, newlyCovered)
				}
				for _, old := range m.Replaced {
					if !before.ContainsRange(old) || !slices.Contains(before.Ranges(), old) {
						t.Fatalf("add %s reports replacing %s, not a stored range of %v", r, old, before.String())
					}
				}
			case 1:
				if r.Validate() == nil {
					_ = other.Add(r)
					otherModel.add(r)
				}
			case 2:
				set.Union(&other)
				for _, run := range otherModel.runs() {
					model.add(run)
				}
			case 3:
				want := otherModel.minus(model)
				for name, gaps := range map[string]RangeSet{"search": gapsBySearch(&other, &set), "walk": gapsByWalk(&other, &set)} {
					if got := gaps.Ranges(); !slices.Equal(got, want) {
						t.Fatalf("gaps by %s (%v, %v) = %v, model %v", name, other.String(), set.String(), got, want)
					}
				}
				if r.Validate() == nil && set.ContainsRange(r) != !slices.Contains(model.bits[a:b], false) {
					t.Fatalf("ContainsRange(%s) = %v on %v", r, set.ContainsRange(r), set.String())
				}
			}
			checkAgainstModel(t, "fuzz", &set, model)
		}
	})
}
