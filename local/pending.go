package local

import (
	"cmp"
	"slices"

	"github.com/covmirror/covmirror/coverage"
)

// pendingLog is what a destination has covered and not yet handed to a
// checkpoint, as the fresh pieces of its records in arrival order. Each
// piece was newly covered when it was recorded, so the pieces never
// overlap and the batch count is their sum; they are sorted and merged
// only when read. Recording a piece is an append (or an extension of the
// last piece, for in-order records), which keeps the record path to one
// ordered-set update: the covered set's.
type pendingLog struct {
	pieces  []coverage.Range
	batches uint64
}

// add appends a piece disjoint from every piece already in the log.
func (p *pendingLog) add(r coverage.Range) {
	p.batches += r.Len()
	if n := len(p.pieces); n > 0 && p.pieces[n-1].End == r.Start {
		p.pieces[n-1].End = r.End
		return
	}
	p.pieces = append(p.pieces, r)
}

func (p *pendingLog) isEmpty() bool { return len(p.pieces) == 0 }

// set is the log as a normalized range set. It does not change the log, so
// it may run under a read lock.
func (p *pendingLog) set() coverage.RangeSet {
	sorted := slices.Clone(p.pieces)
	slices.SortFunc(sorted, func(a, b coverage.Range) int { return cmp.Compare(a.Start, b.Start) })
	var out coverage.RangeSet
	for _, r := range sorted {
		_ = out.Add(r) // sorted: each add extends the last range or appends
	}
	return out
}

// reset replaces the log with the ranges of s.
func (p *pendingLog) reset(s *coverage.RangeSet) {
	*p = pendingLog{}
	p.addSet(s)
}

// addSet adds the ranges of s, which must be disjoint from the log's.
func (p *pendingLog) addSet(s *coverage.RangeSet) {
	for r := range s.All() {
		p.add(r)
	}
}
