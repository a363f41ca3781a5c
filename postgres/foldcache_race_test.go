package postgres

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/object"
)

var errLostAnswer = errors.New("injected: the answer was lost after the write applied")

// lostAnswers is the blobs table with a drawn share of writes applied and
// their answers lost: the caller sees an error of unknown outcome.
type lostAnswers struct {
	*Blobs
	mu   sync.Mutex
	rng  *rand.Rand
	p    float64
	lost atomic.Int64
}

func (l *lostAnswers) draw() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rng.Float64() < l.p
}

func (l *lostAnswers) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	v, err := l.Blobs.Put(ctx, key, data, ifMatch)
	if err == nil && l.draw() {
		l.lost.Add(1)
		return "", errLostAnswer
	}
	return v, err
}

func (l *lostAnswers) PutMany(ctx context.Context, puts []object.PutRequest) ([]string, error) {
	vs, err := l.Blobs.PutMany(ctx, puts)
	if err == nil && l.draw() {
		l.lost.Add(1)
		return nil, errLostAnswer
	}
	return vs, err
}

// TestDeltasFoldersRaceWithCachedBases: 16 writers, each its own Tier and
// pool, append to the deltas layout while three folders, each its own
// handle as processes elected by mistake would be, fold at once, each
// keeping the bases it wrote (FoldCacheBases): two through FoldDeltas,
// one with a cache of one base through writes whose answers are lost
// after they applied. Two readers check that every read holds what was
// acknowledged before it began and nothing never appended; at the end,
// after a clean fold, the coverage is exactly the union and no delta is
// left.
func TestDeltasFoldersRaceWithCachedBases(t *testing.T) {
	seed := testseed.Seed(t)
	schema := freshSchema(t)
	open := func() *Tier {
		tier, err := Open(ctx, Options{URL: catalogtest.PostgresURL() + "&pool_max_conns=2", Schema: schema, Layout: LayoutDeltas,
			MinBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tier.Close)
		return tier
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	const writers, per = 16, 25
	parts := []int32{0, 1, 63, 64, 65, 200, 1000}
	plans := make([][]durable.Checkpoint, writers)
	for w := range writers {
		for i := range per {
			c := durable.Checkpoint{Writer: fmt.Sprintf("pod-%02d", w), Name: fmt.Sprintf("ck-%d", i)}
			for range 1 + rng.IntN(4) {
				d := coverage.Destination{Sink: []string{"raw", "lake"}[rng.IntN(2)], Topic: []string{"orders", "users"}[rng.IntN(2)], Partition: parts[rng.IntN(len(parts))]}
				s := uint64(w*10_000 + i*100 + rng.IntN(50)) // each writer its own offsets: a loss is not hidden
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: s, End: s + 1 + uint64(rng.IntN(20))}}})
			}
			plans[w] = append(plans[w], c)
		}
	}
	var mu sync.Mutex
	done, attempted := model{}, model{}
	snapshot := func(m model) model {
		mu.Lock()
		defer mu.Unlock()
		out := model{}
		for d, s := range m {
			c := s.Clone()
			out[d] = &c
		}
		return out
	}
	stop := make(chan struct{})
	errs := make(chan error, 16)
	var bg sync.WaitGroup
	var folds, foldErrs, reads atomic.Int64
	lossy := &lostAnswers{rng: rand.New(rand.NewPCG(seed, 1)), p: 0.2}
	folders := make([]func(context.Context) (object.FoldResult, error), 3)
	for f := range 2 {
		folders[f] = open().FoldDeltas
	}
	lossy.Blobs = open().Blobs()
	third, err := object.Open(ctx, object.Options{Blobs: lossy, Layout: object.LayoutDeltas, FoldCacheBases: 1, MaxAttempts: 3,
		MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	folders[2] = third.Fold
	for _, fold := range folders {
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := fold(ctx); err != nil {
					foldErrs.Add(1)
				} else {
					folds.Add(1)
				}
			}
		})
	}
	for r := range 2 {
		tier := open()
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				before := snapshot(done)
				got, err := tier.Coverage(ctx, durable.Filter{})
				if err != nil {
					errs <- fmt.Errorf("reader %d (seed %d): %w", r, seed, err)
					return
				}
				if err := within(got, before, snapshot(attempted)); err != nil {
					errs <- fmt.Errorf("reader %d (seed %d): %w", r, seed, err)
					return
				}
				reads.Add(1)
			}
		})
	}
	var wg sync.WaitGroup
	var retries atomic.Int64
	for w := range writers {
		tier := open()
		wg.Go(func() {
			for _, c := range plans[w] {
				mu.Lock()
				attempted.add(c.Ranges)
				mu.Unlock()
				for attempt := 0; ; attempt++ {
					err := tier.Append(ctx, c)
					if err == nil {
						break
					}
					if attempt > 20 {
						errs <- fmt.Errorf("writer %d %q (seed %d): %w", w, c.Name, seed, err)
						return
					}
					retries.Add(1)
					c.MayHaveLanded = true
				}
				mu.Lock()
				done.add(c.Ranges)
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
	clean := open()
	for {
		res, err := clean.FoldDeltas(ctx)
		if err != nil || res.Left != 0 {
			t.Fatalf("seed %d: the clean fold: %+v, %v", seed, res, err)
		}
		if res.Deltas == 0 {
			break
		}
	}
	if keys, err := clean.Blobs().List(ctx, "deltas/"); err != nil || len(keys) != 0 {
		t.Fatalf("seed %d: %d deltas left after the clean fold (%v)", seed, len(keys), err)
	}
	done.check(t, fmt.Sprintf("seed %d: after the clean fold", seed), clean)
	t.Logf("%d writers x %d checkpoints, %d appends retried; %d folds (%d failed), %d answers lost after a write, %d reads checked",
		writers, per, retries.Load(), folds.Load(), foldErrs.Load(), lossy.lost.Load(), reads.Load())
	if reads.Load() == 0 || folds.Load() == 0 || lossy.lost.Load() == 0 {
		t.Fatalf("seed %d: nothing raced: %d reads, %d folds, %d answers lost", seed, reads.Load(), folds.Load(), lossy.lost.Load())
	}
}

// within reports a read that lacks a range of lower or holds one outside
// upper.
func within(got map[coverage.Destination]*coverage.RangeSet, lower, upper model) error {
	for d, want := range lower {
		for r := range want.All() {
			if g := got[d]; g == nil || !g.ContainsRange(r) {
				return fmt.Errorf("%s: %v acknowledged before the read began, missing from it", d, r)
			}
		}
	}
	for d, g := range got {
		for r := range g.All() {
			if u := upper[d]; u == nil || !u.ContainsRange(r) {
				return fmt.Errorf("%s: %v read, but no writer appended it", d, r)
			}
		}
	}
	return nil
}
