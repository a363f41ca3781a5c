//go:build invariants

package local

import (
	"fmt"
	"math"

	"github.com/covmirror/covmirror/coverage"
)

// checkInvariantsLocked panics unless every destination's four sets agree:
// checkpointed within covered; pending and in flight disjoint; and their
// union exactly covered minus checkpointed. Record, the checkpoint steps
// and the load each maintain these by hand; a slip would either leave a
// range out of every checkpoint (lost from the durable tier) or mark one
// checkpointed that is not (a lead there). O(ranges) per call, which is
// why only test builds with the invariants tag turn it on.
func (s *Store) checkInvariantsLocked() {
	for d, st := range s.dests {
		checkDest(d, st)
	}
}

// checkDestsLocked is checkInvariantsLocked for the destinations a record
// touched: a check of every destination per record would make tests with
// many destinations quadratic.
func (s *Store) checkDestsLocked(ds ...coverage.Destination) {
	for _, d := range ds {
		if st := s.dests[d]; st != nil {
			checkDest(d, st)
		}
	}
}

// checkEntriesLocked is checkDestsLocked for a batch's destinations.
func (s *Store) checkEntriesLocked(entries []coverage.Entry) {
	for _, e := range entries {
		s.checkDestsLocked(e.Destination)
	}
}

func checkDest(d coverage.Destination, st *destState) {
	beyondMaxBatchEnd, _ := coverage.NewRangeSet(coverage.Range{Start: coverage.MaxBatchEnd, End: math.MaxUint64})
	{
		if extra := coverage.Gaps(&st.checkpointed, &st.covered); !extra.IsEmpty() {
			panic(fmt.Sprintf("local invariants: %s: checkpointed %v is not covered", d, extra.String()))
		}
		pending := st.pending.set()
		var sum uint64
		for _, r := range st.pending.pieces {
			sum += r.Len()
		}
		if sum != pending.Batches() || sum != st.pending.batches {
			panic(fmt.Sprintf("local invariants: %s: pending pieces overlap or miscount (%d in pieces, %d in their set, %d counted)", d, sum, pending.Batches(), st.pending.batches))
		}
		if rest := coverage.Gaps(&pending, &st.inFlight); !rest.Equal(&pending) {
			panic(fmt.Sprintf("local invariants: %s: pending %v and in flight %v overlap", d, pending.String(), st.inFlight.String()))
		}
		// Batches past coverage.MaxBatchEnd (in a store written before
		// Record refused them) stay covered and out of every checkpoint.
		want := coverage.Gaps(&st.covered, &st.checkpointed)
		want = coverage.Gaps(&want, &beyondMaxBatchEnd)
		union := pending.Clone()
		union.Union(&st.inFlight)
		if !union.Equal(&want) {
			panic(fmt.Sprintf("local invariants: %s: pending %v and in flight %v are not covered %v minus checkpointed %v",
				d, pending.String(), st.inFlight.String(), st.covered.String(), st.checkpointed.String()))
		}
	}
}
