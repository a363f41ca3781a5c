package coverage

import (
	"iter"
	"strings"

	"github.com/tidwall/btree"
)

// btreeDegree trades node size against tree height.
const btreeDegree = 32

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
	tree    *btree.BTreeG[Range] // ordered by Start; nil while empty and never added to
	hint    btree.PathHint       // speeds up mutations near the previous one
	batches uint64               // covered batches, kept in step with tree
}

func newTree() *btree.BTreeG[Range] {
	return btree.NewBTreeGOptions(lessByStart, btree.Options{Degree: btreeDegree, NoLocks: true})
}

func lessByStart(a, b Range) bool { return a.Start < b.Start }

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
	_, err := s.MergeRange(r, nil)
	return err
}

// MergeRange is Add reporting what changed. The replaced ranges are appended
// to buf, which may be nil; passing a reused buffer avoids an allocation on
// the hot path.
func (s *RangeSet) MergeRange(r Range, buf []Range) (Merge, error) {
	if err := r.Validate(); err != nil {
		return Merge{}, err
	}
	if s.tree == nil {
		s.tree = newTree()
	}
	replaced := buf[:0]
	// Past the end and not touching it, the common case of a stream with
	// holes: the tree's bulk-load path appends to the last leaf and keeps
	// leaves full instead of splitting them in half.
	if last, ok := s.tree.Max(); !ok || last.End < r.Start {
		s.tree.Load(r)
		s.batches += r.Len()
		s.checkInvariants()
		return Merge{Merged: r, Replaced: replaced, Added: r.Len()}, nil
	}
	merged := r
	// The predecessor, the last range starting at or before r, absorbs r
	// when it reaches r.Start (overlap or adjacency).
	pred, hasPred := Range{}, false
	s.tree.DescendHint(Range{Start: r.Start}, func(p Range) bool {
		pred, hasPred = p, true
		return false
	}, &s.hint)
	predAbsorbed := hasPred && pred.End >= r.Start
	if predAbsorbed {
		if pred.End >= r.End {
			return Merge{Merged: pred, Replaced: replaced}, nil // already covered
		}
		merged.Start = pred.Start
		replaced = append(replaced, pred)
	}
	// Successors starting at or before the merged end overlap or touch it.
	s.tree.AscendHint(Range{Start: r.Start}, func(n Range) bool {
		if n.Start > merged.End {
			return false
		}
		if predAbsorbed && n.Start == pred.Start {
			return true
		}
		replaced = append(replaced, n)
		merged.End = max(merged.End, n.End)
		return true
	}, &s.hint)
	var absorbed uint64
	for _, old := range replaced {
		// The range keyed at merged.Start is overwritten below, in place.
		if old.Start != merged.Start {
			s.tree.DeleteHint(old, &s.hint)
		}
		absorbed += old.Len()
	}
	s.tree.SetHint(merged, &s.hint)
	added := merged.Len() - absorbed
	s.batches += added
	s.checkInvariants()
	return Merge{Merged: merged, Replaced: replaced, Added: added}, nil
}

// Union adds every range of o to s.
func (s *RangeSet) Union(o *RangeSet) {
	for r := range o.All() {
		// o's ranges are valid by construction.
		_, _ = s.MergeRange(r, nil)
	}
}

// Contains reports whether batch id b is covered.
func (s *RangeSet) Contains(b uint64) bool {
	found := false
	if s.tree != nil {
		s.tree.Descend(Range{Start: b}, func(p Range) bool {
			found = p.Contains(b)
			return false
		})
	}
	return found
}

// ContainsRange reports whether every batch of r is covered. An invalid r is
// not contained.
func (s *RangeSet) ContainsRange(r Range) bool {
	if r.Validate() != nil || s.tree == nil {
		return false
	}
	found := false
	s.tree.Descend(Range{Start: r.Start}, func(p Range) bool {
		found = p.End >= r.End
		return false
	})
	return found
}

// Len is the number of ranges.
func (s *RangeSet) Len() int {
	if s.tree == nil {
		return 0
	}
	return s.tree.Len()
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
	return s.tree.Min()
}

// Last returns the highest range; ok is false for an empty set.
func (s *RangeSet) Last() (r Range, ok bool) {
	if s.tree == nil {
		return Range{}, false
	}
	return s.tree.Max()
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

// Clone returns an independent copy of s. It marks s's storage as shared, so
// it must not run concurrently with any other use of s.
func (s *RangeSet) Clone() RangeSet {
	if s.tree == nil {
		return RangeSet{}
	}
	return RangeSet{tree: s.tree.Copy(), batches: s.batches}
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
