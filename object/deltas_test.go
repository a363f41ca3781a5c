package object

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/durable/durabletest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// openDeltas opens a Tier writing the deltas layout on dir, as another
// process would.
func openDeltas(t testing.TB, dir string) *Tier {
	t.Helper()
	blobs, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blobs.Close() })
	s, err := Open(ctx, Options{Blobs: blobs, Layout: LayoutDeltas, MinBackoff: 100_000, MaxBackoff: 1_000_000})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// foldingTier folds after some of its appends, so that the conformance
// suite's writers race folds as well as each other.
type foldingTier struct {
	*Tier
	t    testing.TB
	mu   sync.Mutex
	rng  *rand.Rand
	fold atomic.Int64
}

func (f *foldingTier) Append(ctx context.Context, c durable.Checkpoint) error {
	if err := f.Tier.Append(ctx, c); err != nil {
		return err
	}
	f.mu.Lock()
	fold := f.rng.IntN(3) == 0
	f.mu.Unlock()
	if fold {
		if _, err := f.Fold(ctx); err != nil {
			return fmt.Errorf("fold: %w", err)
		}
		f.fold.Add(1)
	}
	return nil
}

func TestConformanceDeltas(t *testing.T) {
	seed := testseed.Seed(t)
	var n atomic.Uint64
	durabletest.Run(t, durabletest.Harness{New: func(t *testing.T) func(t *testing.T) durable.Tier {
		dir := t.TempDir()
		return func(t *testing.T) durable.Tier {
			return &foldingTier{Tier: openDeltas(t, dir), t: t, rng: rand.New(rand.NewPCG(seed, n.Add(1)))}
		}
	}})
}

// spread is a random checkpoint over many partition groups and sinks.
func spread(rng *rand.Rand, writer, name string) durable.Checkpoint {
	c := durable.Checkpoint{Name: name, Writer: writer}
	for range 1 + rng.IntN(6) {
		d := coverage.Destination{Sink: []string{"raw", "lake", "search"}[rng.IntN(3)],
			Topic: []string{"orders", "users", "clicks"}[rng.IntN(3)], Partition: int32(rng.IntN(4 * GroupSize))}
		var rs []coverage.Range
		for range 1 + rng.IntN(3) {
			start := uint64(rng.IntN(5000))
			rs = append(rs, coverage.Range{Start: start, End: start + 1 + uint64(rng.IntN(30))})
		}
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: rs})
	}
	return c
}

// TestFoldRacesReadersAndWriters: writers append deltas while two folders
// fold and readers read. Every read holds every checkpoint whose Append
// returned before the read began, and nothing no writer appended; at the
// end, after a last fold, no delta is left and the bases hold the union.
func TestFoldRacesReadersAndWriters(t *testing.T) {
	seed := testseed.Seed(t)
	dir := t.TempDir()
	const writers, per = 4, 40
	plans := make([][]durable.Checkpoint, writers)
	all := model{}
	rng := rand.New(rand.NewPCG(seed, 7))
	for w := range writers {
		for i := range per {
			c := spread(rng, fmt.Sprintf("pod-%d", w), fmt.Sprintf("ck-%d", i))
			plans[w] = append(plans[w], c)
			all.add(c)
		}
	}
	var (
		mu   sync.Mutex
		done = model{} // appends that returned
	)
	stop := make(chan struct{})
	var bg sync.WaitGroup
	errs := make(chan error, 16)
	for f := range 2 {
		tier := openDeltas(t, dir)
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := tier.Fold(ctx); err != nil {
					errs <- fmt.Errorf("folder %d: %w", f, err)
					return
				}
			}
		})
	}
	for r := range 2 {
		tier := openDeltas(t, dir)
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				before := done.clone()
				mu.Unlock()
				got, err := tier.Coverage(ctx, durable.Filter{})
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				if err := before.within(got, all); err != nil {
					errs <- fmt.Errorf("reader %d (seed %d): %w", r, seed, err)
					return
				}
			}
		})
	}
	var wg sync.WaitGroup
	for w := range writers {
		tier := openDeltas(t, dir)
		wg.Go(func() {
			for _, c := range plans[w] {
				if err := tier.Append(ctx, c); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
				mu.Lock()
				done.add(c)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	last := openDeltas(t, dir)
	if _, err := last.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	if keys, err := last.listDeltas(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("after the last fold: %d deltas left (%v)", len(keys), err)
	}
	got, err := last.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if err := all.within(got, all); err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	for _, c := range plans[0][:3] {
		if ok, err := last.Landed(ctx, c.Writer, c.Name); !ok || err != nil {
			t.Fatalf("%s of %s folded: Landed %v, %v", c.Name, c.Writer, ok, err)
		}
	}
}

func (m model) clone() model {
	out := make(model, len(m))
	for d, s := range m {
		c := s.Clone()
		out[d] = &c
	}
	return out
}

// within reports a read that lacks a range of m (a landed append lost) or
// holds one outside max (a range nobody appended: a lead).
func (m model) within(got map[coverage.Destination]*coverage.RangeSet, max model) error {
	for d, want := range m {
		for r := range want.All() {
			if g := got[d]; g == nil || !g.ContainsRange(r) {
				return fmt.Errorf("%s: %v appended before the read began, missing from it", d, r)
			}
		}
	}
	for d, g := range got {
		for r := range g.All() {
			if mx := max[d]; mx == nil || !mx.ContainsRange(r) {
				return fmt.Errorf("%s: %v read, but no writer appended it", d, r)
			}
		}
	}
	return nil
}

// getKeys records the keys each Get reads.
type getKeys struct {
	Blobs
	mu   sync.Mutex
	keys []string
}

func (g *getKeys) Get(ctx context.Context, key string) ([]byte, string, error) {
	g.mu.Lock()
	g.keys = append(g.keys, key)
	g.mu.Unlock()
	return g.Blobs.Get(ctx, key)
}

// TestPartitionsReadOnlyTheirBases: a read of a few partitions, as a new
// owner's Resume of what it was handed, reads only the bases of those
// partitions' groups, and returns exactly their coverage.
func TestPartitionsReadOnlyTheirBases(t *testing.T) {
	dir := t.TempDir()
	w := openDeltas(t, dir)
	c := durable.Checkpoint{Writer: "pod-a", Name: "all"}
	for _, topic := range []string{"orders", "users", "clicks"} {
		for p := range int32(10 * GroupSize) {
			for _, sink := range []string{"raw", "lake"} {
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: coverage.Destination{Sink: sink, Topic: topic, Partition: p},
					Ranges: []coverage.Range{{Start: uint64(p), End: uint64(p) + 5}}})
			}
		}
	}
	if err := w.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	inner, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	counting := &getKeys{Blobs: inner}
	r, err := Open(ctx, Options{Blobs: counting})
	if err != nil {
		t.Fatal(err)
	}
	want := []coverage.TopicPartition{{Topic: "orders", Partition: 3}, {Topic: "orders", Partition: 5}, {Topic: "users", Partition: 2*GroupSize + 1}}
	got, err := r.Coverage(ctx, durable.Filter{Partitions: want})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2*len(want) {
		t.Fatalf("read %d destinations, want %d", len(got), 2*len(want))
	}
	for _, tp := range want {
		set := got[coverage.Destination{Sink: "lake", Topic: tp.Topic, Partition: tp.Partition}]
		if set == nil || !set.ContainsRange(coverage.Range{Start: uint64(tp.Partition), End: uint64(tp.Partition) + 5}) {
			t.Fatalf("%v: %v", tp, set)
		}
	}
	var bases []string
	for _, k := range counting.keys {
		if strings.HasPrefix(k, basesDir) {
			bases = append(bases, k)
		}
	}
	if len(bases) != 2 { // orders group 0, users group 2
		t.Fatalf("read bases %v, want the two groups of the partitions asked for, of the 30 there", bases)
	}
}
