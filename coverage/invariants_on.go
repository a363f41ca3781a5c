//go:build invariants

package coverage

import "fmt"

// checkInvariants panics if s is not normalized: every range valid, sorted,
// separated from the next by at least one uncovered batch, and the batch
// count equal to the sum of the lengths. It costs O(ranges) per mutation,
// which is why only test builds turn it on.
func (s *RangeSet) checkInvariants() {
	var prev Range
	var batches uint64
	first := true
	for r := range s.All() {
		if err := r.Validate(); err != nil {
			panic(fmt.Sprintf("coverage invariants: stored %v", err))
		}
		if !first && r.Start <= prev.End {
			panic(fmt.Sprintf("coverage invariants: %s follows %s without a gap", r, prev))
		}
		prev, first = r, false
		batches += r.Len()
	}
	if batches != s.batches {
		panic(fmt.Sprintf("coverage invariants: %d batches counted, %d recorded", batches, s.batches))
	}
}
