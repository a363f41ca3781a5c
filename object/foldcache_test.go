package object

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// baseGets is how many of the keys g read since from are bases, of those
// in had where had is not nil.
func baseGets(g *getKeys, from int, had map[string]bool) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, k := range g.keys[from:] {
		if strings.HasPrefix(k, basesDir) && (had == nil || had[k]) {
			n++
		}
	}
	return n
}

// TestFoldWritesFromItsCache: a folder writes the bases it folded last
// time from memory, under If-Match of the version it wrote, reading none;
// when another folder wrote a base since, that write is refused, the base
// is read again and nothing either folder merged is lost.
func TestFoldWritesFromItsCache(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 11))
	dir := t.TempDir()
	open := func(cache int) (*Tier, *getKeys) {
		inner, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = inner.Close() })
		g := &getKeys{Blobs: inner}
		s, err := Open(ctx, Options{Blobs: g, Layout: LayoutDeltas, FoldCacheBases: cache, MinBackoff: 100_000, MaxBackoff: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		return s, g
	}
	folder, reads := open(0)
	other, _ := open(0)
	uncachedFolder, uncachedReads := open(-1)
	all := model{}
	n := 0
	appendSome := func() {
		for range 5 {
			c := spread(rng, "pod-a", fmt.Sprintf("ck-%d", n))
			n++
			all.add(c)
			if err := folder.Append(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	fold := func(s *Tier) FoldResult {
		t.Helper()
		res, err := s.Fold(ctx)
		if err != nil || res.Left != 0 {
			t.Fatalf("seed %d: fold: %+v, %v", seed, res, err)
		}
		return res
	}
	check := func(when string) {
		t.Helper()
		got, err := other.Coverage(ctx, durable.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if err := all.within(got, all); err != nil {
			t.Fatalf("seed %d: %s: %v", seed, when, err)
		}
	}

	appendSome()
	fold(folder)
	keys, err := folder.opts.Blobs.List(ctx, basesDir)
	if err != nil || len(keys) == 0 {
		t.Fatalf("bases after the first fold: %v, %v", keys, err)
	}
	had := map[string]bool{}
	for _, k := range keys {
		had[k] = true
	}
	from := len(reads.keys)
	appendSome()
	if res := fold(folder); res.Bases == 0 {
		t.Fatalf("seed %d: the second fold wrote no base", seed)
	}
	if got := baseGets(reads, from, had); got != 0 {
		t.Fatalf("seed %d: the second fold read %d of the %d bases it wrote last time; it should write them from memory", seed, got, len(had))
	}
	check("after a fold from the cache")

	// Another folder writes every base; the first one's versions are
	// stale, so its writes are refused and it reads again.
	appendSome()
	fold(other)
	appendSome()
	from = len(reads.keys)
	fold(folder)
	if baseGets(reads, from, nil) == 0 {
		t.Fatalf("seed %d: the bases another folder wrote were not read again", seed)
	}
	check("after a fold over another folder's bases")

	// With no cache every base is read each fold.
	appendSome()
	from = len(uncachedReads.keys)
	if res := fold(uncachedFolder); baseGets(uncachedReads, from, nil) < res.Bases {
		t.Fatalf("seed %d: with FoldCacheBases -1, %d bases written but %d read", seed, res.Bases, baseGets(uncachedReads, from, nil))
	}
	check("after a fold with no cache")
}
