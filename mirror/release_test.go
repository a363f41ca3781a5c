package mirror

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/local"
)

// watchedTier is a durable tier that can be made to fail, and that runs
// onAppend after each append it committed.
type watchedTier struct {
	durable.Tier
	down     atomic.Bool
	onAppend func(durable.Checkpoint)
}

func (w *watchedTier) Append(ctx2 context.Context, c durable.Checkpoint) error {
	if w.down.Load() {
		return fmt.Errorf("%w: injected: the durable tier is down", coverage.ErrUnavailable)
	}
	if err := w.Tier.Append(ctx2, c); err != nil {
		return err
	}
	if w.onAppend != nil {
		w.onAppend(c)
	}
	return nil
}

// releasePod is a Mirror over a fresh local tier and an object tier on a
// temporary directory, watched.
func releasePod(t *testing.T) (*Mirror, *watchedTier, *local.Store) {
	t.Helper()
	tier, err := openObjectTier(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &watchedTier{Tier: tier}
	l, err := local.Open(local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Local: l, Durable: w, Writer: "pod-a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, w, l
}

func durableCoverage(t testing.TB, tier durable.Tier) map[coverage.Destination]*coverage.RangeSet {
	t.Helper()
	all, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

// TestReleaseCommitsBeforeItDrops: a release checkpoints the partition's
// pending ranges into the durable tier while the local tier still holds
// them, and only then drops them locally, for every sink of the partition
// and no other partition; a release whose checkpoint fails drops nothing
// and says so.
func TestReleaseCommitsBeforeItDrops(t *testing.T) {
	m, tier, l := releasePod(t)
	raw0 := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 0}
	lake0 := raw0.WithSink("lake")
	raw1 := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 1}
	for _, d := range []coverage.Destination{raw0, lake0, raw1} {
		record(t, m, d, 0, 10)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	record(t, m, raw0, 10, 20) // pending when the release begins
	record(t, m, lake0, 30, 40)

	// Down: the release fails and the local tier keeps everything.
	tier.down.Store(true)
	sum, err := m.Release(ctx, []coverage.TopicPartition{{Topic: "orders", Partition: 0}})
	if err == nil || !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "nothing uncommitted is dropped") || len(sum.Released) != 0 {
		t.Fatalf("release with the durable tier down: %+v, %v", sum, err)
	}
	if ds, _ := l.Destinations(ctx); !slices.Equal(ds, []coverage.Destination{lake0, raw0, raw1}) {
		t.Fatalf("destinations after a failed release: %v", ds)
	}
	tier.down.Store(false)

	// Each append that lands must find the local tier still holding what
	// it carried.
	var early []string
	tier.onAppend = func(c durable.Checkpoint) {
		for _, dr := range c.Ranges {
			covered, err := l.Covered(ctx, dr.Destination)
			if err != nil {
				early = append(early, err.Error())
				continue
			}
			for _, r := range dr.Ranges {
				if !covered.ContainsRange(r) {
					early = append(early, fmt.Sprintf("%s %s left the local tier before its commit returned", dr.Destination, r))
				}
			}
		}
	}
	sum, err = m.Release(ctx, []coverage.TopicPartition{{Topic: "orders", Partition: 0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(early) > 0 {
		t.Fatal(early)
	}
	if !slices.Equal(sum.Released, []coverage.Destination{lake0, raw0}) || len(sum.Retained) != 0 || sum.Checkpoint.Checkpoints != 1 || sum.Checkpoint.Batches != 20 {
		t.Fatalf("release: %+v", sum)
	}
	all := durableCoverage(t, tier)
	if got := all[raw0].String(); got != "{[0,20)}" {
		t.Fatalf("durable raw/orders/0: %s", got)
	}
	if got := all[lake0].String(); got != "{[0,10) [30,40)}" {
		t.Fatalf("durable lake/orders/0: %s", got)
	}
	if ds, _ := m.Destinations(ctx); !slices.Equal(ds, []coverage.Destination{raw1}) {
		t.Fatalf("destinations after the release: %v", ds)
	}
	diag, err := l.Diagnostics(ctx)
	if err != nil || len(diag.Destinations) != 1 || diag.Destinations[0].Destination != raw1 {
		t.Fatalf("diagnostics after the release: %+v, %v", diag.Destinations, err)
	}
	// Bad input releases nothing and checkpoints nothing.
	if _, err := m.Release(ctx, []coverage.TopicPartition{{Topic: "", Partition: 1}}); !errors.Is(err, coverage.ErrInvalidDestination) {
		t.Fatalf("release of an empty topic: %v", err)
	}
	if ds, _ := m.Destinations(ctx); len(ds) != 1 {
		t.Fatalf("a refused release dropped something: %v", ds)
	}
}

// TestReleaseRacesRecordsIntoObjects: writers record through the Mirror
// while a releaser releases random partitions and the checkpoints land in
// an object tier. Every release drops only destinations whose records, as
// of its start, the durable tier holds, and in the end the durable tier
// holds every record acknowledged: none was lost to a release.
func TestReleaseRacesRecordsIntoObjects(t *testing.T) {
	seed := testseed.Seed(t)
	m, tier, _ := releasePod(t)
	parts := []coverage.TopicPartition{{Topic: "a", Partition: 0}, {Topic: "a", Partition: 1}, {Topic: "b", Partition: 0}}
	sinks := []string{"raw", "lake"}
	ops := 300
	if testing.Short() {
		ops = 100
	}
	var mu sync.Mutex
	recorded := map[coverage.Destination]*coverage.RangeSet{}
	errs := make(chan error, 8)
	// report keeps the first errors and drops the rest: a goroutine never
	// blocks on it, whatever it holds.
	report := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	var wg, releaser sync.WaitGroup
	writing := make(chan struct{}) // closed when the writers are done
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(10+w)))
			for range ops {
				tp := parts[r.IntN(len(parts))]
				d := coverage.Destination{Sink: sinks[r.IntN(len(sinks))], Topic: tp.Topic, Partition: tp.Partition}
				start := r.Uint64N(500)
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
				if r.IntN(4) == 0 { // let releases, each a checkpoint, fall between records
					time.Sleep(time.Duration(r.IntN(500)) * time.Microsecond)
				}
			}
		}()
	}
	released, releases := 0, 0
	releaser.Add(1)
	go func() {
		defer releaser.Done()
		r := rand.New(rand.NewPCG(seed, 1))
		// Until the writers are done, and a few times after (until one
		// drops something).
		for after := 0; after < 3 || released == 0 && after < 100; releases++ {
			select {
			case <-writing:
				after++
			default:
			}
			time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
			some := []coverage.TopicPartition{parts[r.IntN(len(parts))]}
			before := map[coverage.Destination]coverage.RangeSet{}
			mu.Lock()
			for d, set := range recorded {
				before[d] = set.Clone()
			}
			mu.Unlock()
			sum, err := m.Release(ctx, some)
			if err != nil {
				report(err)
				return
			}
			released += len(sum.Released)
			all, err := tier.Coverage(ctx, durable.Filter{})
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
					report(fmt.Errorf("released %s while the durable tier lacked %s recorded before the release", d, lack.String()))
				}
			}
		}
	}()
	wg.Wait()
	close(writing)
	releaser.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	t.Logf("%d destinations released over %d releases", released, releases)
	if released == 0 {
		t.Fatal("no release dropped anything: the test exercised nothing")
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	all := durableCoverage(t, tier)
	for d, rec := range recorded {
		have := all[d]
		if have == nil {
			have = new(coverage.RangeSet)
		}
		if lost := coverage.Gaps(rec, have); !lost.IsEmpty() {
			t.Errorf("%s: recorded %s is not in the durable tier", d, lost.String())
		}
	}
}
