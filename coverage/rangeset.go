package coverage

import (
	"iter"
	"strings"
)

// RangeSet is a set of batch ids held as sorted, non-overlapping,
// non-adjacent ranges. Memory and the cost of every operation grow with the
// number of ranges (the gaps), never with the number of additions: a million
// in-order single-batch additions leave one range.
//
// The zero value is an empty set ready to use. A RangeSet must not be copied
// after its first Add: copies would share storage. Use Clone for an
// independent copy (it is cheap: storage is shared copy-on-write). A RangeSet
// is not safe for concurrent use with a mutation or a Clone; concurrent reads
// are safe.
type RangeSet struct {
	tree    *rangeTree // nil while empty and never added to
	batches uint64     // covered batches, kept in step with tree
}

// NewRangeSet returns the union of ranges. It fails with ErrInvalidRange on the
// first invalid one.
func NewRangeSet(ranges ...Range) (RangeSet, error) {
	var s RangeSet
	for _, r := range ranges {
		if err := s.Add(r); err != nil {
			return RangeSet{}, err
		}
	}
	return s, nil
}

// Merge reports what one Add changed.
type Merge struct {
	// Merged is the stored range that now holds the added range: the added
	// range widened by every range it overlapped or touched.
	Merged Range
	// Replaced are the previously stored ranges that Merged absorbed, in
	// order; a store keeping one key per range deletes exactly these.
	Replaced []Range
	// Added is the number of batches newly covered; zero means the set
	// already covered the range and nothing changed.
	Added uint64
}

// Fresh appends to dst the parts of r the set did not cover before the
// merge m that added r: r minus the ranges m replaced (when m.Added is zero,
// nothing). It lets a caller track what each addition newly covered.
func (m Merge) Fresh(r Range, dst []Range) []Range {
	if m.Added == 0 {
		return dst
	}
	cursor := r.Start
	for _, old := range m.Replaced {
		if old.Start > cursor {
			dst = append(dst, Range{Start: cursor, End: min(old.Start, r.End)})
		}
		cursor = max(cursor, old.End)
		if cursor >= r.End {
			return dst
		}
	}
	if cursor < r.End {
		dst = append(dst, Range{Start: cursor, End: r.End})
	}
	return dst
}

// Add unions r into the set, merging it with every range it overlaps or is
// adjacent to. It fails with ErrInvalidRange, changing nothing, when r is
// empty or inverted.
func (s *RangeSet) Add(r Range) error {
	var buf [4]Range // the replaced ranges, unused: on the stack
	_, err := s.MergeRange(r, buf[:0])
	return err
}

// MergeRange is Add reporting what changed. The replaced ranges are appended
// to buf, which may be nil; passing a reused buffer avoids an allocation on
// the hot path.
func (s *RangeSet) MergeRange(r Range, buf []Range) (Merge, error) {
	if r.End <= r.Start {
		return Merge{}, r.Validate()
	}
	if s.tree == nil {
		s.tree = newRangeTree()
	}
	// A stream adds at or past its last range almost always: extending that
	// range or appending one touches only the last chunk.
	m, ok := s.tree.mergeAtTail(r, buf[:0])
	if !ok {
		m = s.tree.merge(r, buf[:0])
	}
	s.batches += m.Added
	s.checkInvariants()
	return m, nil
}

// Union adds every range of o to s.
func (s *RangeSet) Union(o *RangeSet) {
	var buf [4]Range
	for r := range o.All() {
		// o's ranges are valid by construction.
		_, _ = s.MergeRange(r, buf[:0])
	}
}

// Contains reports whether batch id b is covered.
func (s *RangeSet) Contains(b uint64) bool {
	p, ok := s.pred(b)
	return ok && p.Contains(b)
}

// ContainsRange reports whether every batch of r is covered. An invalid r is
// not contained.
func (s *RangeSet) ContainsRange(r Range) bool {
	if r.Validate() != nil {
		return false
	}
	p, ok := s.pred(r.Start)
	return ok && p.End >= r.End
}

// pred returns the last range starting at or before b.
func (s *RangeSet) pred(b uint64) (p Range, ok bool) {
	if s.tree != nil {
		s.tree.Descend(Range{Start: b}, func(r Range) bool {
			p, ok = r, true
			return false
		})
	}
	return p, ok
}

// Len is the number of ranges.
func (s *RangeSet) Len() int {
	if s.tree == nil {
		return 0
	}
	return s.tree.n
}

// Batches is the number of covered batch ids.
func (s *RangeSet) Batches() uint64 { return s.batches }

// IsEmpty reports whether nothing is covered.
func (s *RangeSet) IsEmpty() bool { return s.Len() == 0 }

// First returns the lowest range; ok is false for an empty set.
func (s *RangeSet) First() (r Range, ok bool) {
	if s.tree == nil {
		return Range{}, false
	}
	return s.tree.first()
}

// Last returns the highest range; ok is false for an empty set.
func (s *RangeSet) Last() (r Range, ok bool) {
	if s.tree == nil {
		return Range{}, false
	}
	return s.tree.last()
}

// All yields the ranges in ascending order. The set must not be mutated
// during the iteration.
func (s *RangeSet) All() iter.Seq[Range] {
	return func(yield func(Range) bool) {
		if s.tree != nil {
			s.tree.Scan(yield)
		}
	}
}

// Ranges returns the ranges in ascending order as a new slice.
func (s *RangeSet) Ranges() []Range {
	out := make([]Range, 0, s.Len())
	for r := range s.All() {
		out = append(out, r)
	}
	return out
}

// Equal reports whether s and o cover exactly the same batch ids.
func (s *RangeSet) Equal(o *RangeSet) bool {
	if s.Len() != o.Len() || s.batches != o.batches {
		return false
	}
	next, stop := iter.Pull(o.All())
	defer stop()
	for r := range s.All() {
		q, _ := next()
		if q != r {
			return false
		}
	}
	return true
}

// Clone returns an independent copy of s: it copies the chunk directory (one
// entry per up to 128 ranges) and shares the chunks until either set changes
// one. It marks s's storage as shared, so it must not run concurrently with
// any other use of s.
func (s *RangeSet) Clone() RangeSet {
	if s.tree == nil {
		return RangeSet{}
	}
	return RangeSet{tree: s.tree.clone(), batches: s.batches}
}

// String formats the set as "{[1,3) [4,6)}".
func (s *RangeSet) String() string {
	var b strings.Builder
	b.WriteByte('{')
	first := true
	for r := range s.All() {
		if !first {
			b.WriteByte(' ')
		}
		first = false
		b.WriteString(r.String())
	}
	b.WriteByte('}')
	return b.String()
}
