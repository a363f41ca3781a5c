package mirror

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/object"
)

// faultyTier is a durable tier whose appends, drawn from a seeded
// generator, fail before reaching it, land and then fail (the answer
// lost), or are slowed so that a checkpoint is in flight when a release
// comes.
type faultyTier struct {
	durable.Tier
	mu                  sync.Mutex
	rng                 *rand.Rand
	on                  atomic.Bool
	before, after, slow atomic.Int64
}

func (f *faultyTier) Append(ctx context.Context, c durable.Checkpoint) error {
	f.mu.Lock()
	x := f.rng.Float64()
	pause := time.Duration(f.rng.IntN(2000)) * time.Microsecond
	f.mu.Unlock()
	if f.on.Load() {
		switch {
		case x < 0.15:
			f.before.Add(1)
			return fmt.Errorf("%w: injected before the append", coverage.ErrUnavailable)
		case x < 0.4:
			f.slow.Add(1)
			time.Sleep(pause)
		}
	}
	err := f.Tier.Append(ctx, c)
	if err == nil && f.on.Load() && x >= 0.85 {
		f.after.Add(1)
		return fmt.Errorf("%w: injected after the append landed", coverage.ErrUnavailable)
	}
	return err
}

// TestReleaseRacesFailingCheckpoints: writers record, a checkpointer
// checkpoints, a folder folds and a releaser releases random partitions at
// once, into a deltas object tier whose appends fail before landing, land
// and then fail, or are slow. A release must drop only what the durable
// tier holds (a checkpoint that failed, or is in flight, keeps its
// destinations), and once the faults stop and the pod syncs, the durable
// tier holds every record: nothing was lost to a release.
func TestReleaseRacesFailingCheckpoints(t *testing.T) {
	seed := testseed.Seed(t)
	b, err := object.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	inner, err := object.Open(ctx, object.Options{Blobs: b, Layout: object.LayoutDeltas})
	if err != nil {
		t.Fatal(err)
	}
	tier := &faultyTier{Tier: inner, rng: rand.New(rand.NewPCG(seed, 2))}
	tier.on.Store(true)
	l, err := local.Open(local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Local: l, Durable: tier, Writer: "pod-a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	parts := []coverage.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b", Partition: 64}}
	sinks := []string{"raw", "lake"}
	var mu sync.Mutex
	recorded := map[coverage.Destination]*coverage.RangeSet{}
	errs := make(chan error, 8)
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	stop := make(chan struct{})
	var wg, bg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(seed, uint64(10+w)))
			for range 600 {
				tp := parts[r.IntN(len(parts))]
				d := coverage.Destination{Sink: sinks[r.IntN(len(sinks))], Topic: tp.Topic, Partition: tp.Partition}
				start := r.Uint64N(2000)
				rg := coverage.Range{Start: start, End: start + 1 + r.Uint64N(5)}
				if err := m.Record(ctx, d, rg); err != nil {
					report(err)
					return
				}
				mu.Lock()
				if recorded[d] == nil {
					recorded[d] = new(coverage.RangeSet)
				}
				_ = recorded[d].Add(rg)
				mu.Unlock()
				if r.IntN(4) == 0 {
					time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
				}
			}
		})
	}
	var checkpoints, failedCheckpoints, folds, releases, released, failedReleases atomic.Int64
	bg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := m.Checkpoint(ctx); err != nil {
				failedCheckpoints.Add(1)
			} else {
				checkpoints.Add(1)
			}
		}
	})
	bg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := inner.Fold(ctx); err == nil {
				folds.Add(1)
			}
			time.Sleep(time.Millisecond)
		}
	})
	bg.Go(func() {
		r := rand.New(rand.NewPCG(seed, 1))
		for {
			select {
			case <-stop:
				return
			default:
			}
			some := []coverage.TopicPartition{parts[r.IntN(len(parts))]}
			mu.Lock()
			before := map[coverage.Destination]coverage.RangeSet{}
			for d, set := range recorded {
				before[d] = set.Clone()
			}
			mu.Unlock()
			releases.Add(1)
			sum, err := m.Release(ctx, some)
			if err != nil {
				failedReleases.Add(1) // a failed checkpoint: nothing more is dropped
			}
			released.Add(int64(len(sum.Released)))
			all, err := inner.Coverage(ctx, durable.Filter{})
			if err != nil {
				report(err)
				return
			}
			for _, d := range sum.Released {
				b, have := before[d], all[d]
				if have == nil {
					have = new(coverage.RangeSet)
				}
				if lack := coverage.Gaps(&b, have); !lack.IsEmpty() {
					report(fmt.Errorf("seed %d: released %s while the durable tier lacked %s recorded before the release", seed, d, lack.String()))
				}
			}
		}
	})
	wg.Wait()
	// Releases and checkpoints go on a while after the records, so that
	// failed checkpoints are retried and releases find drops to make.
	for releases.Load() < 80 || checkpoints.Load() < 20 {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	bg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	tier.on.Store(false)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	all, err := inner.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for d, rec := range recorded {
		have := all[d]
		if have == nil {
			have = new(coverage.RangeSet)
		}
		if lost := coverage.Gaps(rec, have); !lost.IsEmpty() {
			t.Errorf("seed %d: %s: recorded %s is not in the durable tier", seed, d, lost.String())
		}
	}
	for d, have := range all {
		rec := recorded[d]
		if rec == nil {
			rec = new(coverage.RangeSet)
		}
		if lead := coverage.Gaps(have, rec); !lead.IsEmpty() {
			t.Errorf("seed %d: %s: the durable tier holds %s, never recorded (a lead)", seed, d, lead.String())
		}
	}
	t.Logf("%d checkpoints (%d failed), %d folds, %d releases (%d failed) dropping %d destinations; appends: %d failed before, %d after landing, %d slowed",
		checkpoints.Load(), failedCheckpoints.Load(), folds.Load(), releases.Load(), failedReleases.Load(), released.Load(), tier.before.Load(), tier.after.Load(), tier.slow.Load())
	if released.Load() == 0 || failedCheckpoints.Load() == 0 {
		t.Fatalf("seed %d: nothing raced: %d destinations released, %d checkpoints failed", seed, released.Load(), failedCheckpoints.Load())
	}
}
