package object

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// underfoot is one change made by hand to a base the folder holds in its
// cache, through another handle on the store: what it does to the base's
// bytes (nil: delete it), and what it adds to what the store must keep.
type underfoot struct {
	name string
	// change returns the base's new bytes from its current ones, nil to
	// delete it; extra is what it added, which must survive the next
	// folds (a by-hand merge is a recorded range).
	change func(t *testing.T, data []byte) (next []byte, extra *coverage.DestinationRanges)
	// unreadable: the change leaves the base unreadable, so the fold must
	// leave the deltas that touch it, and fold them once it is restored.
	unreadable bool
}

var underfoots = []underfoot{
	{name: "same bytes", change: func(t *testing.T, data []byte) ([]byte, *coverage.DestinationRanges) { return data, nil }},
	{name: "a range merged by hand", change: func(t *testing.T, data []byte) ([]byte, *coverage.DestinationRanges) {
		b, err := decodeBase(data)
		if err != nil {
			t.Fatal(err)
		}
		o := b.Sinks[0]
		d := o.Dests[0]
		// Far past anything spread appends, so only this change can hold it.
		r := coverage.Range{Start: 1_000_000, End: 1_000_007}
		d.Ranges = unionRanges(d.Ranges, []coverage.Range{r})
		d.encoded = nil
		o.Dests[0] = d
		return encodeBase(b), &coverage.DestinationRanges{Destination: coverage.Destination{Sink: o.Sink, Topic: d.Topic, Partition: d.Partition}, Ranges: []coverage.Range{r}}
	}},
	{name: "deleted", change: func(t *testing.T, data []byte) ([]byte, *coverage.DestinationRanges) { return nil, nil }},
	{name: "corrupted", unreadable: true, change: func(t *testing.T, data []byte) ([]byte, *coverage.DestinationRanges) {
		bad := slices.Clone(data)
		bad[len(bad)/2] ^= 0x5a
		return bad, nil
	}},
}

// TestFoldCacheBaseChangedUnderneath: a folder holds the bases it wrote;
// one of them is then rewritten by hand (the same bytes, a range merged
// in, deleted, corrupted) through another handle, on a directory and on
// the S3 stand-in, with a cache of one base and of the default size. The
// next folds must keep every range appended and merged by hand (less a
// deleted base's, which only lag), nothing else, and never overwrite a
// base they cannot read.
func TestFoldCacheBaseChangedUnderneath(t *testing.T) {
	seed := testseed.Seed(t)
	testCredentials(t)
	backends := map[string]func(t *testing.T) (Blobs, Blobs){
		"dir": func(t *testing.T) (Blobs, Blobs) {
			dir := t.TempDir()
			a, err := OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			b, err := OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
			return a, b
		},
		"s3": func(t *testing.T) (Blobs, Blobs) {
			endpoint := newS3Stub(t, &s3Stub{pageSize: 100})
			return openS3(t, endpoint, "bucket", "c", nil), openS3(t, endpoint, "bucket", "c", nil)
		},
	}
	for _, backend := range []string{"dir", "s3"} {
		for _, cache := range []int{1, 0} {
			for i, u := range underfoots {
				t.Run(fmt.Sprintf("%s/cache-%d/%s", backend, cache, u.name), func(t *testing.T) {
					folderBlobs, hand := backends[backend](t)
					rng := rand.New(rand.NewPCG(seed, uint64(100*cache+i)))
					underfootOnce(t, seed, rng, folderBlobs, hand, cache, u)
				})
			}
		}
	}
}

func underfootOnce(t *testing.T, seed uint64, rng *rand.Rand, folderBlobs, hand Blobs, cache int, u underfoot) {
	folder, err := Open(ctx, Options{Blobs: folderBlobs, Layout: LayoutDeltas, FoldCacheBases: cache, MinBackoff: 1000, MaxBackoff: 10_000})
	if err != nil {
		t.Fatal(err)
	}
	reader, err := Open(ctx, Options{Blobs: hand, Layout: LayoutDeltas})
	if err != nil {
		t.Fatal(err)
	}
	all, later := model{}, model{} // later: appended after the change
	n := 0
	appendSome := func(m ...model) {
		for range 8 {
			c := spread(rng, fmt.Sprintf("pod-%d", n%3), fmt.Sprintf("ck-%d", n))
			n++
			for _, x := range append(m, all) {
				x.add(c)
			}
			if err := folder.Append(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	fold := func(wantLeft bool) {
		t.Helper()
		res, err := folder.Fold(ctx)
		if err != nil || (res.Left > 0) != wantLeft {
			t.Fatalf("seed %d: fold: %+v, %v (want left: %v)", seed, res, err, wantLeft)
		}
	}
	appendSome()
	fold(false)
	appendSome()
	fold(false)
	folder.basesMu.Lock()
	var key string
	for k := range folder.bases {
		key = k
	}
	folder.basesMu.Unlock()
	if key == "" {
		t.Fatalf("seed %d: the folder cached no base", seed)
	}
	data, version, err := hand.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	next, extra := u.change(t, data)
	if next == nil {
		if err := hand.Delete(ctx, key); err != nil {
			t.Fatal(err)
		}
	} else if _, err := hand.Put(ctx, key, next, version); err != nil {
		t.Fatal(err)
	}
	if extra != nil {
		c := durable.Checkpoint{Ranges: []coverage.DestinationRanges{*extra}}
		all.add(c)
		later.add(c)
	}
	// Appended after the change: at least one delta touches the changed base.
	appendSome(later)
	b, _ := decodeBase(data)
	c := durable.Checkpoint{Writer: "pod-x", Name: "touch", Ranges: []coverage.DestinationRanges{{
		Destination: coverage.Destination{Sink: "raw", Topic: b.Topic, Partition: b.Group * GroupSize},
		Ranges:      []coverage.Range{{Start: 2_000_000, End: 2_000_001}}}}}
	all.add(c)
	later.add(c)
	if err := folder.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	fold(u.unreadable)
	if u.unreadable {
		// Left as it was, never overwritten from the cache.
		if now, _, err := hand.Get(ctx, key); err != nil || !slices.Equal(now, next) {
			t.Fatalf("seed %d: the unreadable base was rewritten (%v)", seed, err)
		}
		_, v, err := hand.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := hand.Put(ctx, key, data, v); err != nil { // restored
			t.Fatal(err)
		}
		fold(false)
	}
	fold(false)
	if keys, err := reader.listDeltas(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("seed %d: %d deltas left (%v)", seed, len(keys), err)
	}
	got, err := reader.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	lower := all
	if next == nil {
		// What the deleted base held may lag, never lead; the rest stays.
		lower = later.clone()
		for d, set := range all {
			if groupOf(d.Topic, d.Partition) != (group{b.Topic, b.Group}) {
				lower[d] = set
			}
		}
	}
	if err := lower.within(got, all); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
}

// TestFleetRaceFoldCacheOfOne: the fleet race of 16 writers with two
// folders, each keeping only one base between folds, so that most bases
// are read and one is written from memory, every handle through faults.
func TestFleetRaceFoldCacheOfOne(t *testing.T) {
	seed := testseed.Seed(t)
	raceFleet(t, seed, fleetRace{writers: 16, per: 10, open: dirFleet(t.TempDir()), landed: true, foldCache: 1})
}

// cutAfter lets n Puts through, then cancels the fold that makes them:
// the fold stops there, as a process killed mid-fold would, the writes
// made before it durable and the rest never sent.
type cutAfter struct {
	Blobs
	mu     sync.Mutex
	n      int
	cancel context.CancelFunc
}

func (c *cutAfter) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	c.mu.Lock()
	c.n--
	cut := c.n < 0
	c.mu.Unlock()
	if cut {
		c.cancel()
		return "", ctx.Err()
	}
	return c.Blobs.Put(ctx, key, data, ifMatch)
}

// TestFoldCutAtEveryPut: a fold stopped after each of its Puts in turn
// (bases, fold log, emptied sink objects), then folded again by the same
// Tier, which keeps the bases it wrote, and by a new one, which keeps
// none: every range appended is kept, nothing else, no delta is left.
func TestFoldCutAtEveryPut(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	cuts := 0
	for n := 0; ; n++ {
		dir := t.TempDir()
		inner, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		cut := &cutAfter{Blobs: inner, n: 1 << 30}
		folder, err := Open(ctx, Options{Blobs: cut, Layout: LayoutDeltas, FoldCacheBases: 1 + n%3})
		if err != nil {
			t.Fatal(err)
		}
		all := model{}
		for i := range 3 * 8 {
			if i%8 == 0 && i > 0 {
				if _, err := folder.Fold(ctx); err != nil {
					t.Fatal(err)
				}
			}
			c := spread(rng, fmt.Sprintf("pod-%d", i%3), fmt.Sprintf("ck-%d", i))
			all.add(c)
			if err := folder.Append(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		fctx, cancel := context.WithCancel(ctx)
		cut.mu.Lock()
		cut.n, cut.cancel = n, cancel
		cut.mu.Unlock()
		_, ferr := folder.Fold(fctx)
		cancel()
		cut.mu.Lock()
		finished := cut.n >= 0
		cut.n = 1 << 30
		cut.mu.Unlock()
		// Again by the same Tier, then by another process's.
		fresh, err := Open(ctx, Options{Blobs: inner, Layout: LayoutDeltas})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []*Tier{folder, fresh} {
			if res, err := s.Fold(ctx); err != nil || res.Left != 0 {
				t.Fatalf("seed %d, cut after %d puts: fold again: %+v, %v", seed, n, res, err)
			}
			got, err := fresh.Coverage(ctx, durable.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if err := all.within(got, all); err != nil {
				t.Fatalf("seed %d, cut after %d puts: %v", seed, n, err)
			}
		}
		if keys, err := fresh.listDeltas(ctx); err != nil || len(keys) != 0 {
			t.Fatalf("seed %d, cut after %d puts: %d deltas left (%v)", seed, n, len(keys), err)
		}
		_ = inner.Close()
		if finished {
			if ferr != nil {
				t.Fatalf("seed %d: the uncut fold: %v", seed, ferr)
			}
			break
		}
		cuts++
	}
	if cuts < 3 {
		t.Fatalf("seed %d: only %d cuts: the fold made too few puts", seed, cuts)
	}
	t.Logf("a fold cut after each of its first %d puts", cuts)
}
