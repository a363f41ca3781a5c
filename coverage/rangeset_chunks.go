package coverage

import (
	"slices"
	"sync/atomic"
)

// The ranges are stored in chunks, short sorted slices, listed in order in a
// directory: a range costs its 16 bytes plus a share of its chunk's, where a
// tree of ranges spent a node slot (and half-empty nodes) on each. The
// directory is a plain sorted slice, not a tree: it holds one entry per
// chunk (a few thousand for a set of a million ranges), so a binary search
// of it stays in cache where a tree's nodes did not, and a split's copy of
// its tail is short next to the chunkMax/2 additions that fill a chunk.
const chunkMax = 128 // ranges in a full chunk: bounds the copying of an insert

// chunk holds sorted, disjoint, non-adjacent ranges; it is never empty.
type chunk struct {
	owner  uint64 // id of the only tree that may change it in place
	ranges []Range
}

// chunkRef is a directory entry. key is at most the chunk's first Start and
// greater than every Start in the chunk before; the first chunk's key is 0.
// So every id routes to one chunk, the one with the greatest key at or below
// it, and a chunk's key never has to change: a range moved downward by a
// merge stays in its chunk, and chunks losing their first ranges keep theirs.
type chunkRef struct {
	key uint64
	c   *chunk
}

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

// rangeTree is a RangeSet's storage. Clone copies the directory and shares
// the chunks: a chunk whose owner is not the tree's id is copied before it
// is changed.
type rangeTree struct {
	dir  []chunkRef // by key, ascending
	id   uint64
	n    int    // ranges
	tail *chunk // the last chunk if owned and known, else nil
}

// treeIDs hands out tree ids; a clone gets a fresh one and so does the tree
// it was taken from, since neither owns the chunks they now share.
var treeIDs atomic.Uint64

func newRangeTree() *rangeTree { return &rangeTree{id: treeIDs.Add(1)} }

func (t *rangeTree) clone() *rangeTree {
	t.id, t.tail = treeIDs.Add(1), nil
	return &rangeTree{dir: slices.Clone(t.dir), id: treeIDs.Add(1), n: t.n}
}

// own returns the chunk at directory index i, copied first if t does not
// own it.
func (t *rangeTree) own(i int) *chunk {
	if c := t.dir[i].c; c.owner == t.id {
		return c
	}
	c := &chunk{owner: t.id, ranges: slices.Clone(t.dir[i].c.ranges)}
	t.dir[i].c = c
	return c
}

// mergeAtTail adds r if it starts at or past the start of the last range,
// touching only the last chunk; ok is false, and nothing changed, otherwise.
func (t *rangeTree) mergeAtTail(r Range, replaced []Range) (m Merge, ok bool) {
	c := t.tail
	if c == nil {
		if t.n == 0 {
			t.tail = &chunk{owner: t.id, ranges: []Range{r}}
			t.dir = append(t.dir[:0], chunkRef{key: 0, c: t.tail})
			t.n = 1
			return Merge{Merged: r, Replaced: replaced, Added: r.Len()}, true
		}
		lastIdx := len(t.dir) - 1
		if r.Start < t.dir[lastIdx].key {
			// Before the last chunk's key, so before its first range: decided
			// from the directory alone, without reading the chunk.
			return Merge{}, false
		}
		c = t.dir[lastIdx].c
		if last := c.ranges[len(c.ranges)-1]; r.Start < last.Start || r.End <= last.End {
			// Not at the tail, or nothing to change: leave the chunk shared.
			if r.Start < last.Start {
				return Merge{}, false
			}
			return Merge{Merged: last, Replaced: replaced}, true
		}
		c = t.own(lastIdx)
		t.tail = c
	}
	last := &c.ranges[len(c.ranges)-1]
	switch {
	case r.Start > last.End: // past it, with a hole between
		if len(c.ranges) == chunkMax {
			c = &chunk{owner: t.id, ranges: make([]Range, 0, chunkMax)}
			t.dir = append(t.dir, chunkRef{key: r.Start, c: c})
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
	ci := t.route(r.Start)
	rc := t.dir[ci].c
	// i is the first range of ci's chunk starting after r.Start; the
	// predecessor is just before it, in the chunk before when i is 0.
	i := rc.after(r.Start)
	at, j := ci, i // where the merged range goes
	merged := r
	pred, predAt, predIdx, hasPred := Range{}, ci, i-1, i > 0
	if hasPred {
		pred = rc.ranges[i-1]
	} else if ci > 0 {
		predAt = ci - 1
		pc := t.dir[predAt].c
		predIdx, hasPred = len(pc.ranges)-1, true
		pred = pc.ranges[predIdx]
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
	for _, n := range t.dir[at].c.ranges[j:] {
		if n.Start > merged.End {
			break
		}
		replaced = append(replaced, n)
		merged.End = max(merged.End, n.End)
		absorbed += n.Len()
		inAt++
	}
	if j+inAt == len(t.dir[at].c.ranges) {
		// Possibly more in the following chunks: drop them there first, so
		// that a split of at's chunk below cannot be mistaken for one.
		replaced, absorbed = t.absorbAfter(at, &merged, replaced, absorbed)
	}
	c := t.own(at)
	if inAt > 0 {
		c.ranges[j] = merged
		c.ranges = slices.Delete(c.ranges, j+1, j+inAt)
	} else {
		t.insert(at, c, j, merged)
	}
	t.n += 1 - len(replaced)
	if t.tail != t.dir[len(t.dir)-1].c {
		t.tail = nil // the last chunk was split or removed
	}
	return Merge{Merged: merged, Replaced: replaced, Added: merged.Len() - absorbed}
}

// absorbAfter removes from the chunks after directory index at the leading
// ranges that start at or before merged's end, widening merged by them.
// Chunks absorbed whole leave the directory in one deletion, so a wide
// addition costs one copy of the directory, not one per chunk.
func (t *rangeTree) absorbAfter(at int, merged *Range, replaced []Range, absorbed uint64) ([]Range, uint64) {
	next := at + 1
	defer func(from int) { t.dir = slices.Delete(t.dir, from, next) }(next)
	for ; next < len(t.dir); next++ {
		k := 0
		for _, n := range t.dir[next].c.ranges {
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
		case k < len(t.dir[next].c.ranges):
			c := t.own(next)
			c.ranges = slices.Delete(c.ranges, 0, k)
			return replaced, absorbed
		}
	}
	return replaced, absorbed
}

// insert puts r at index j of c, the owned chunk at directory index at,
// splitting a full chunk in two halves.
func (t *rangeTree) insert(at int, c *chunk, j int, r Range) {
	if len(c.ranges) < chunkMax {
		c.ranges = slices.Insert(c.ranges, j, r)
		return
	}
	half := chunkMax / 2
	right := &chunk{owner: t.id, ranges: make([]Range, chunkMax-half, chunkMax)}
	copy(right.ranges, c.ranges[half:])
	clear(c.ranges[half:])
	c.ranges = c.ranges[:half]
	if j <= half {
		c.ranges = slices.Insert(c.ranges, j, r)
	} else {
		right.ranges = slices.Insert(right.ranges, j-half, r)
	}
	t.dir = slices.Insert(t.dir, at+1, chunkRef{key: right.ranges[0].Start, c: right})
}

// route returns the directory index of the chunk that id x routes to: the
// last whose key is at or below x. The tree must not be empty, and the
// first key is 0, so there is one.
//
// The comparisons are added up, not branched on: for random ids they are
// coin flips, and the directory is small enough to stay in cache, so a
// mispredicted branch cost more than the probe it chose. (The chunk search,
// whose ranges are mostly out of cache, keeps its branches: there a right
// guess starts the next load early, and measured faster.)
func (t *rangeTree) route(x uint64) int {
	// dir[base].key is at or below x (the first key is 0), and the answer
	// is below base+n.
	dir := t.dir
	base, n := 0, len(dir)
	for n > 1 {
		half := n >> 1
		base += half & -atOrBelow(dir[base+half].key, x)
		n -= half
	}
	return base
}

// atOrBelow is 1 if a <= b, else 0, computed without a branch.
func atOrBelow(a, b uint64) int {
	if a <= b {
		return 1
	}
	return 0
}

// Descend yields, from the last range starting at or before pivot.Start
// down to the first, the ranges in descending order.
func (t *rangeTree) Descend(pivot Range, yield func(Range) bool) {
	if t.n == 0 {
		return
	}
	for ci := t.route(pivot.Start); ci >= 0; ci-- {
		rs := t.dir[ci].c.ranges
		for i := len(rs) - 1; i >= 0; i-- {
			if r := rs[i]; r.Start <= pivot.Start && !yield(r) {
				return
			}
		}
	}
}

// Ascend yields the ranges starting at or after pivot.Start in ascending
// order.
func (t *rangeTree) Ascend(pivot Range, yield func(Range) bool) {
	if t.n == 0 {
		return
	}
	for _, ref := range t.dir[t.route(pivot.Start):] {
		for _, r := range ref.c.ranges {
			if r.Start >= pivot.Start && !yield(r) {
				return
			}
		}
	}
}

// Scan yields every range in ascending order.
func (t *rangeTree) Scan(yield func(Range) bool) {
	for _, ref := range t.dir {
		for _, r := range ref.c.ranges {
			if !yield(r) {
				return
			}
		}
	}
}

func (t *rangeTree) first() (Range, bool) {
	if t.n == 0 {
		return Range{}, false
	}
	return t.dir[0].c.ranges[0], true
}

func (t *rangeTree) last() (Range, bool) {
	c := t.tail
	if c == nil {
		if t.n == 0 {
			return Range{}, false
		}
		c = t.dir[len(t.dir)-1].c
	}
	return c.ranges[len(c.ranges)-1], true
}
