package coverage

import (
	"slices"
	"sync/atomic"

	"github.com/tidwall/btree"
)

// The ranges are stored in chunks, short sorted slices, themselves ordered
// in a btree: a range costs its 16 bytes plus a share of its chunk's, where a
// btree of ranges spent a node slot (and half-empty nodes) on each.
const (
	chunkMax    = 128 // ranges in a full chunk: bounds the copying of an insert
	btreeDegree = 32  // the btree holds one item per chunk
)

// chunk holds sorted, disjoint, non-adjacent ranges; it is never empty.
type chunk struct {
	owner  uint64 // id of the only tree that may change it in place
	ranges []Range
}

// chunkRef is the btree's item. key is at most the chunk's first Start and
// greater than every Start in the chunk before; the first chunk's key is 0.
// So every id routes to one chunk, the one with the greatest key at or below
// it, and a chunk's key never has to change: a range moved downward by a
// merge stays in its chunk, and chunks losing their first ranges keep theirs.
type chunkRef struct {
	key uint64
	c   *chunk
}

func lessByKey(a, b chunkRef) bool { return a.key < b.key }

// after returns the index of the first range starting after x. A plain loop:
// slices.BinarySearchFunc calls its comparison through a pointer, which
// costs a fifth of a random addition.
func (c *chunk) after(x uint64) int {
	lo, hi := 0, len(c.ranges)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if c.ranges[m].Start <= x {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// rangeTree is a RangeSet's storage. Clone shares the btree (copy-on-write)
// and the chunks: a chunk whose owner is not the tree's id is copied before
// it is changed.
type rangeTree struct {
	chunks *btree.BTreeG[chunkRef]
	hint   btree.PathHint // speeds up mutations near the previous one
	id     uint64
	n      int    // ranges
	tail   *chunk // the last chunk if owned and known, else nil
}

// treeIDs hands out tree ids; a clone gets a fresh one and so does the tree
// it was taken from, since neither owns the chunks they now share.
var treeIDs atomic.Uint64

func newRangeTree() *rangeTree {
	return &rangeTree{
		chunks: btree.NewBTreeGOptions(lessByKey, btree.Options{Degree: btreeDegree, NoLocks: true}),
		id:     treeIDs.Add(1),
	}
}

func (t *rangeTree) clone() *rangeTree {
	t.id, t.tail = treeIDs.Add(1), nil
	return &rangeTree{chunks: t.chunks.Copy(), id: treeIDs.Add(1), n: t.n}
}

// own returns ref's chunk, copied first if t does not own it.
func (t *rangeTree) own(ref chunkRef) *chunk {
	if ref.c.owner == t.id {
		return ref.c
	}
	c := &chunk{owner: t.id, ranges: slices.Clone(ref.c.ranges)}
	t.chunks.SetHint(chunkRef{key: ref.key, c: c}, &t.hint)
	return c
}

// mergeAtTail adds r if it starts at or past the start of the last range,
// touching only the last chunk; ok is false, and nothing changed, otherwise.
func (t *rangeTree) mergeAtTail(r Range, replaced []Range) (m Merge, ok bool) {
	c := t.tail
	if c == nil {
		if t.n == 0 {
			t.tail = &chunk{owner: t.id, ranges: []Range{r}}
			t.chunks.Load(chunkRef{key: 0, c: t.tail})
			t.n = 1
			return Merge{Merged: r, Replaced: replaced, Added: r.Len()}, true
		}
		ref, _ := t.chunks.Max()
		c = ref.c
		if last := c.ranges[len(c.ranges)-1]; r.Start < last.Start || r.End <= last.End {
			// Not at the tail, or nothing to change: leave the chunk shared.
			if r.Start < last.Start {
				return Merge{}, false
			}
			return Merge{Merged: last, Replaced: replaced}, true
		}
		c = t.own(ref)
		t.tail = c
	}
	last := &c.ranges[len(c.ranges)-1]
	switch {
	case r.Start > last.End: // past it, with a hole between
		if len(c.ranges) == chunkMax {
			c = &chunk{owner: t.id}
			t.chunks.Load(chunkRef{key: r.Start, c: c})
			t.tail = c
		}
		c.ranges = append(c.ranges, r)
		t.n++
		return Merge{Merged: r, Replaced: replaced, Added: r.Len()}, true
	case r.Start < last.Start:
		return Merge{}, false
	case r.End <= last.End:
		return Merge{Merged: *last, Replaced: replaced}, true
	}
	replaced = append(replaced, *last)
	added := r.End - last.End
	last.End = r.End
	return Merge{Merged: *last, Replaced: replaced, Added: added}, true
}

// merge adds r anywhere: the general case of MergeRange, on a tree holding
// at least one range.
func (t *rangeTree) merge(r Range, replaced []Range) Merge {
	ref := t.route(r.Start)
	// i is the first range of ref's chunk starting after r.Start; the
	// predecessor is just before it, in the chunk before when i is 0.
	i := ref.c.after(r.Start)
	at, j := ref, i // where the merged range goes
	merged := r
	pred, predAt, predIdx, hasPred := Range{}, ref, i-1, i > 0
	if hasPred {
		pred = ref.c.ranges[i-1]
	} else if ref.key > 0 {
		predAt = t.route(ref.key - 1)
		predIdx, hasPred = len(predAt.c.ranges)-1, true
		pred = predAt.c.ranges[predIdx]
	}
	if hasPred && pred.End >= r.Start {
		if pred.End >= r.End {
			return Merge{Merged: pred, Replaced: replaced} // already covered
		}
		merged.Start = pred.Start
		at, j = predAt, predIdx
	}
	// The ranges from (at, j) on that start at or before the merged end
	// overlap or touch it (the predecessor, if absorbed, first).
	var absorbed uint64
	inAt := 0
	for _, n := range at.c.ranges[j:] {
		if n.Start > merged.End {
			break
		}
		replaced = append(replaced, n)
		merged.End = max(merged.End, n.End)
		absorbed += n.Len()
		inAt++
	}
	if j+inAt == len(at.c.ranges) {
		// Possibly more in the following chunks: drop them there first, so
		// that a split of at's chunk below cannot be mistaken for one.
		replaced, absorbed = t.absorbAfter(at.key, &merged, replaced, absorbed)
	}
	c := t.own(at)
	if inAt > 0 {
		c.ranges[j] = merged
		c.ranges = slices.Delete(c.ranges, j+1, j+inAt)
	} else {
		t.insert(at.key, c, j, merged)
	}
	t.n += 1 - len(replaced)
	t.tail = nil // the last chunk may have been copied, split or removed
	return Merge{Merged: merged, Replaced: replaced, Added: merged.Len() - absorbed}
}

// absorbAfter removes from the chunks after the one keyed key the leading
// ranges that start at or before merged's end, widening merged by them.
func (t *rangeTree) absorbAfter(key uint64, merged *Range, replaced []Range, absorbed uint64) ([]Range, uint64) {
	for {
		var next chunkRef
		t.chunks.AscendHint(chunkRef{key: key + 1}, func(ref chunkRef) bool {
			next = ref
			return false
		}, &t.hint)
		if next.c == nil {
			return replaced, absorbed
		}
		k := 0
		for _, n := range next.c.ranges {
			if n.Start > merged.End {
				break
			}
			replaced = append(replaced, n)
			merged.End = max(merged.End, n.End)
			absorbed += n.Len()
			k++
		}
		switch {
		case k == 0:
			return replaced, absorbed
		case k == len(next.c.ranges):
			t.chunks.DeleteHint(next, &t.hint)
		default:
			c := t.own(next)
			c.ranges = slices.Delete(c.ranges, 0, k)
			return replaced, absorbed
		}
	}
}

// insert puts r at index j of c, the owned chunk keyed key, splitting a full
// chunk in two halves.
func (t *rangeTree) insert(key uint64, c *chunk, j int, r Range) {
	if len(c.ranges) < chunkMax {
		c.ranges = slices.Insert(c.ranges, j, r)
		return
	}
	half := chunkMax / 2
	right := &chunk{owner: t.id, ranges: slices.Clone(c.ranges[half:])}
	clear(c.ranges[half:])
	c.ranges = c.ranges[:half]
	if j <= half {
		c.ranges = slices.Insert(c.ranges, j, r)
	} else {
		right.ranges = slices.Insert(right.ranges, j-half, r)
	}
	t.chunks.SetHint(chunkRef{key: right.ranges[0].Start, c: right}, &t.hint)
}

// route returns the chunk that id x routes to; the tree must not be empty.
// It takes no path hint: random additions miss it, and a missed hint made
// them slower than a plain search.
func (t *rangeTree) route(x uint64) chunkRef {
	var ref chunkRef
	t.chunks.Descend(chunkRef{key: x}, func(r chunkRef) bool {
		ref = r
		return false
	})
	return ref
}

// Descend yields, from the last range starting at or before pivot.Start
// down to the first, the ranges in descending order.
func (t *rangeTree) Descend(pivot Range, yield func(Range) bool) {
	t.chunks.Descend(chunkRef{key: pivot.Start}, func(ref chunkRef) bool {
		for i := len(ref.c.ranges) - 1; i >= 0; i-- {
			if r := ref.c.ranges[i]; r.Start <= pivot.Start && !yield(r) {
				return false
			}
		}
		return true
	})
}

// Ascend yields the ranges starting at or after pivot.Start in ascending
// order.
func (t *rangeTree) Ascend(pivot Range, yield func(Range) bool) {
	if t.n == 0 {
		return
	}
	from := t.route(pivot.Start)
	t.chunks.Ascend(from, func(ref chunkRef) bool {
		for _, r := range ref.c.ranges {
			if r.Start >= pivot.Start && !yield(r) {
				return false
			}
		}
		return true
	})
}

// Scan yields every range in ascending order.
func (t *rangeTree) Scan(yield func(Range) bool) {
	t.chunks.Scan(func(ref chunkRef) bool {
		for _, r := range ref.c.ranges {
			if !yield(r) {
				return false
			}
		}
		return true
	})
}

func (t *rangeTree) first() (Range, bool) {
	ref, ok := t.chunks.Min()
	if !ok {
		return Range{}, false
	}
	return ref.c.ranges[0], true
}

func (t *rangeTree) last() (Range, bool) {
	c := t.tail
	if c == nil {
		ref, ok := t.chunks.Max()
		if !ok {
			return Range{}, false
		}
		c = ref.c
	}
	return c.ranges[len(c.ranges)-1], true
}
