package coverage

// Gaps returns the batches of reference that covered lacks: reference minus
// covered. With raw's coverage as the reference, these are exactly the
// batches a sink must be sent again, including the leading gaps before the
// sink's first covered batch and the trailing gap after its last. Batches the
// sink covers beyond the reference are not gaps. Neither argument is changed.
func Gaps(reference, covered *RangeSet) RangeSet {
	// Against many reference ranges one ordered walk of covered beats a
	// search per reference range.
	if reference.Len() > 64 && reference.Len() > covered.Len()/16 {
		return gapsByWalk(reference, covered)
	}
	return gapsBySearch(reference, covered)
}

// gapsBySearch is Gaps with a tree search per reference range.
func gapsBySearch(reference, covered *RangeSet) RangeSet {
	var gaps RangeSet
	for ref := range reference.All() {
		cursor := ref.Start
		for c := range covered.overlapping(ref) {
			if c.Start > cursor {
				gaps.appendOrdered(Range{Start: cursor, End: c.Start})
			}
			cursor = max(cursor, c.End)
			if cursor >= ref.End {
				break
			}
		}
		if cursor < ref.End {
			gaps.appendOrdered(Range{Start: cursor, End: ref.End})
		}
	}
	return gaps
}

// overlapping yields, in order, the ranges of s that share a batch with r.
func (s *RangeSet) overlapping(r Range) func(yield func(Range) bool) {
	return func(yield func(Range) bool) {
		if s.tree == nil {
			return
		}
		from := r.Start
		s.tree.Descend(Range{Start: r.Start}, func(p Range) bool {
			if p.End > r.Start {
				from = p.Start
			}
			return false
		})
		s.tree.Ascend(Range{Start: from}, func(c Range) bool {
			return c.Start < r.End && yield(c)
		})
	}
}

// appendOrdered adds a valid range known to lie after every stored one.
func (s *RangeSet) appendOrdered(r Range) {
	// MergeRange cannot fail on a valid range, and an ordered append merges
	// with at most the last range, so this stays O(log n).
	_, _ = s.MergeRange(r, nil)
}

// gapsByWalk is Gaps as a merge of the two ordered sequences: O(n+m).
func gapsByWalk(reference, covered *RangeSet) RangeSet {
	var gaps RangeSet
	cov := covered.Ranges()
	i := 0
	for ref := range reference.All() {
		cursor := ref.Start
		for i < len(cov) && cov[i].End <= cursor {
			i++
		}
		for j := i; j < len(cov) && cov[j].Start < ref.End; j++ {
			if cov[j].Start > cursor {
				gaps.appendOrdered(Range{Start: cursor, End: cov[j].Start})
			}
			cursor = max(cursor, cov[j].End)
		}
		if cursor < ref.End {
			gaps.appendOrdered(Range{Start: cursor, End: ref.End})
		}
	}
	return gaps
}
