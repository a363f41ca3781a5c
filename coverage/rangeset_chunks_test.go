package coverage

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// layoutError reports the first broken rule of the chunked storage, or nil:
// chunks non-empty and at most chunkMax long, the first keyed 0, every key
// at most its chunk's first Start and above every Start of the chunk before,
// the range count right, and the cached tail the last chunk and owned.
func layoutError(s *RangeSet) error {
	t := s.tree
	if t == nil {
		return nil
	}
	var err error
	n, index := 0, 0
	var prev *chunk
	for _, ref := range t.dir {
		c := ref.c
		switch {
		case len(c.ranges) == 0 || len(c.ranges) > chunkMax:
			err = fmt.Errorf("chunk %d holds %d ranges", index, len(c.ranges))
		case index == 0 && ref.key != 0:
			err = fmt.Errorf("first chunk keyed %d", ref.key)
		case ref.key > c.ranges[0].Start:
			err = fmt.Errorf("chunk %d keyed %d above its first range %s", index, ref.key, c.ranges[0])
		case prev != nil && ref.key <= prev.ranges[len(prev.ranges)-1].Start:
			err = fmt.Errorf("chunk %d keyed %d at or below the last range %s before it", index, ref.key, prev.ranges[len(prev.ranges)-1])
		}
		n += len(c.ranges)
		prev = c
		index++
		if err != nil {
			break
		}
	}
	switch {
	case err != nil:
		return err
	case n != t.n:
		return fmt.Errorf("%d ranges stored, %d counted", n, t.n)
	case t.tail != nil && (t.tail != prev || t.tail.owner != t.id):
		return fmt.Errorf("cached tail is not the last chunk, or is shared")
	}
	return nil
}

// TestRangeSetChunkLayout grows sets past many chunks in the three orders
// that reach the storage differently (appends, random inserts that split
// chunks, wide additions that empty whole chunks) and checks the layout and
// the model after each step.
func TestRangeSetChunkLayout(t *testing.T) {
	const universe = 8 * chunkMax * 4
	var s RangeSet
	m := newBitModel(0, universe)
	add := func(r Range) {
		t.Helper()
		if err := s.Add(r); err != nil {
			t.Fatalf("add %s: %v", r, err)
		}
		m.add(r)
		if err := layoutError(&s); err != nil {
			t.Fatalf("after adding %s: %v", r, err)
		}
	}
	for b := uint64(0); b < universe; b += 4 { // appends: many full chunks
		add(Range{Start: b, End: b + 1})
	}
	clone := s.Clone()
	for b := uint64(2); b < universe; b += 4 { // inserts into full chunks: splits
		add(Range{Start: b, End: b + 1})
	}
	for b := uint64(universe - 100); b > 2*chunkMax; b -= 3 * chunkMax { // wide: absorb chunks
		add(Range{Start: b - 2*chunkMax, End: b})
	}
	checkAgainstModel(t, "after the wide additions", &s, m)
	if err := layoutError(&clone); err != nil || clone.Len() != universe/4 {
		t.Fatalf("the clone changed: %d ranges, %v", clone.Len(), err)
	}
	add(Range{Start: 0, End: universe})
	checkAgainstModel(t, "after covering everything", &s, m)
}

// TestRangeTreeRoute checks route against a linear scan on random
// directories of every small size and some large ones, with keys spread
// or packed so that probes land on, between and past them.
func TestRangeTreeRoute(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	for size := 1; size < 300; size += 1 + size/16 {
		for range 20 {
			tree := &rangeTree{dir: make([]chunkRef, size)}
			spread := uint64(1 + rng.IntN(4))
			for i := 1; i < size; i++ {
				tree.dir[i].key = tree.dir[i-1].key + 1 + rng.Uint64N(spread)
			}
			top := tree.dir[size-1].key + 3
			for range 50 {
				x := rng.Uint64N(top)
				want := 0
				for i, ref := range tree.dir {
					if ref.key <= x {
						want = i
					}
				}
				if got := tree.route(x); got != want {
					t.Fatalf("size %d, keys %v: route(%d) = %d, want %d", size, tree.dir, x, got, want)
				}
			}
		}
	}
}

// TestRangeTreeRouteWideKeys checks route against a linear scan with keys
// anywhere in the id space, up to math.MaxUint64, probed at 0, at each key,
// just either side of it and at math.MaxUint64.
func TestRangeTreeRouteWideKeys(t *testing.T) {
	seed := testSeed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	for size := 1; size < 200; size += 1 + size/8 {
		for range 20 {
			keys := []uint64{0}
			for len(keys) < size {
				keys = append(keys, rng.Uint64()>>rng.IntN(64))
			}
			if rng.IntN(2) == 0 {
				keys[len(keys)-1] = math.MaxUint64 - uint64(rng.IntN(2))
			}
			slices.Sort(keys)
			keys = slices.Compact(keys)
			tree := &rangeTree{dir: make([]chunkRef, len(keys))}
			for i, k := range keys {
				tree.dir[i].key = k
			}
			probes := []uint64{0, 1, 1 << 63, 1<<63 - 1, math.MaxUint64 - 1, math.MaxUint64}
			for _, k := range keys {
				probes = append(probes, k-1, k, k+1) // wrapping at the ends is a probe too
			}
			for _, x := range probes {
				want := 0
				for i, ref := range tree.dir {
					if ref.key <= x {
						want = i
					}
				}
				if got := tree.route(x); got != want {
					t.Fatalf("keys %v: route(%d) = %d, want %d", keys, x, got, want)
				}
			}
		}
	}
}
