package object

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
	"github.com/covmirror/covmirror/internal/testseed"
)

// slowBlobs delays a drawn share of calls, before or after the inner call,
// so that a folder's steps (base written, fold log, deletes) interleave
// with writers' and readers' at many more points than they would alone.
type slowBlobs struct {
	Blobs
	mu  sync.Mutex
	rng *rand.Rand
	p   float64
	max time.Duration
}

func (s *slowBlobs) pause() {
	s.mu.Lock()
	d := time.Duration(0)
	if s.rng.Float64() < s.p {
		d = time.Duration(s.rng.Int64N(int64(s.max)))
	}
	s.mu.Unlock()
	if d > 0 {
		time.Sleep(d)
	}
}

func (s *slowBlobs) Get(ctx context.Context, key string) ([]byte, string, error) {
	s.pause()
	defer s.pause()
	return s.Blobs.Get(ctx, key)
}

func (s *slowBlobs) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	s.pause()
	defer s.pause()
	return s.Blobs.Put(ctx, key, data, ifMatch)
}

func (s *slowBlobs) List(ctx context.Context, prefix string) ([]string, error) {
	s.pause()
	defer s.pause()
	return s.Blobs.List(ctx, prefix)
}

func (s *slowBlobs) Delete(ctx context.Context, key string) error {
	s.pause()
	defer s.pause()
	return s.Blobs.Delete(ctx, key)
}

// fleetRace is one run of raceFleet.
type fleetRace struct {
	writers, per int
	// open returns one process's handle on the shared store, its faults
	// (if any) drawn from rng; i numbers the handles.
	open func(t *testing.T, i int, rng *rand.Rand, p float64) Blobs
	// skew is added to the second folder's clock: a folder whose clock
	// jumped names and prunes fold logs by it.
	skew time.Duration
	// landed: Landed must answer true for every acknowledged checkpoint,
	// in flight and at the end (false when skew prunes fold logs early).
	landed bool
	// foldCache is each handle's Options.FoldCacheBases.
	foldCache int
}

// raceFleet: writers append checkpoints through their own faulty handles
// (a failed Append is retried with MayHaveLanded until it returns nil)
// while two folders fold at once and three readers read with partition
// filters (a few partitions, many across groups and topics, one topic's).
// Every read must hold what was acknowledged before it began and nothing
// beyond what had been attempted when it ended; at the end, after a clean
// fold, the coverage is exactly the union of the checkpoints and no delta
// is left.
func raceFleet(t *testing.T, seed uint64, cfg fleetRace) {
	var handles atomic.Uint64
	// Faults are likeliest for writers, whose one Put per Append would
	// else rarely fail three times, and least for readers, whose reads
	// are many calls each.
	open := func(layout Layout, maxFold int, now func() time.Time, p float64) *Tier {
		i := handles.Add(1)
		b := cfg.open(t, int(i), rand.New(rand.NewPCG(seed, 7000+i)), p)
		s, err := Open(ctx, Options{Blobs: b, Layout: layout, MaxAttempts: 3, MinBackoff: time.Microsecond,
			MaxBackoff: 100 * time.Microsecond, MaxFoldDeltas: maxFold, Parallel: 4, Now: now, FoldCacheBases: cfg.foldCache})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	sinks := []string{"raw", "lake"}
	topics := []string{"orders", "clicks", "λ"}
	parts := []int32{0, 1, 2, GroupSize - 1, GroupSize, GroupSize + 1, 3 * GroupSize, 3*GroupSize + 63}
	rng := rand.New(rand.NewPCG(seed, 1))
	plans := make([][]durable.Checkpoint, cfg.writers)
	for w := range cfg.writers {
		for i := range cfg.per {
			c := durable.Checkpoint{Writer: fmt.Sprintf("pod-%02d", w), Name: fmt.Sprintf("cp-%d", i)}
			for range 1 + rng.IntN(3) {
				d := coverage.Destination{Sink: sinks[rng.IntN(len(sinks))], Topic: topics[rng.IntN(len(topics))], Partition: parts[rng.IntN(len(parts))]}
				// Each writer its own stretch of offsets, so that a range one
				// writer lost is not hidden by another's.
				start := uint64(w*10_000 + i*100 + rng.IntN(50))
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1 + uint64(rng.IntN(20))}}})
			}
			plans[w] = append(plans[w], c)
		}
	}
	var (
		mu        sync.Mutex
		done      = model{}
		attempted = model{}
		acked     []durable.Checkpoint
	)
	snapshot := func(m model) model { mu.Lock(); defer mu.Unlock(); return m.clone() }
	errs := make(chan error, 64)
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var folds, foldErrs, reads, failedReads, landedChecks atomic.Int64
	for f := range 2 {
		now := time.Now
		if f == 1 && cfg.skew != 0 {
			now = func() time.Time { return time.Now().Add(cfg.skew) }
		}
		tier := open(LayoutDeltas, []int{5, 0}[f], now, 0.01)
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := tier.Fold(ctx); err != nil {
					foldErrs.Add(1)
				} else {
					folds.Add(1)
				}
			}
		})
	}
	pick := func(r *rand.Rand, n int) []coverage.TopicPartition {
		out := make([]coverage.TopicPartition, 0, n)
		for range n {
			out = append(out, coverage.TopicPartition{Topic: topics[r.IntN(len(topics))], Partition: parts[r.IntN(len(parts))]})
		}
		return out
	}
	filters := []func(*rand.Rand) durable.Filter{
		func(r *rand.Rand) durable.Filter { return durable.Filter{Partitions: pick(r, 1+r.IntN(3))} },
		// More than 8: the indexed matcher, and many groups.
		func(r *rand.Rand) durable.Filter {
			return durable.Filter{Sink: sinks[r.IntN(len(sinks))], Partitions: pick(r, 9+r.IntN(20))}
		},
		func(r *rand.Rand) durable.Filter {
			return durable.Filter{Topic: topics[r.IntN(len(topics))], Partitions: pick(r, 1+r.IntN(12))}
		},
	}
	for r := range len(filters) {
		tier := open(LayoutDeltas, 0, nil, 0.005)
		rr := rand.New(rand.NewPCG(seed, 500+uint64(r)))
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				f := filters[r](rr)
				before := snapshot(done)
				mu.Lock()
				var probe *durable.Checkpoint
				if len(acked) > 0 {
					probe = &acked[rr.IntN(len(acked))]
				}
				mu.Unlock()
				got, err := tier.Coverage(ctx, f)
				if err != nil {
					failedReads.Add(1)
					continue
				}
				after := snapshot(attempted)
				reads.Add(1)
				if err := before.filtered(f).within(got, after); err != nil {
					errs <- fmt.Errorf("reader %d, filter %+v (seed %d): %w", r, f, seed, err)
					return
				}
				if probe != nil && cfg.landed {
					ok, err := tier.Landed(ctx, probe.Writer, probe.Name)
					if err == nil && !ok {
						errs <- fmt.Errorf("reader %d (seed %d): %q of %q acknowledged, Landed false", r, seed, probe.Name, probe.Writer)
						return
					}
					landedChecks.Add(1)
				}
			}
		})
	}
	var wg sync.WaitGroup
	var retries atomic.Int64
	for w := range cfg.writers {
		tier := open(LayoutDeltas, 0, nil, 0.2)
		wg.Go(func() {
			for _, c := range plans[w] {
				mu.Lock()
				attempted.add(c)
				mu.Unlock()
				for attempt := 0; ; attempt++ {
					err := tier.Append(ctx, c)
					if err == nil {
						break
					}
					if errors.Is(err, durable.ErrNameReused) || errors.Is(err, ErrCorruptObject) || attempt > 300 {
						errs <- fmt.Errorf("writer %d %q (seed %d): %w", w, c.Name, seed, err)
						return
					}
					retries.Add(1)
					c.MayHaveLanded = true
				}
				mu.Lock()
				done.add(c)
				acked = append(acked, c)
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
	clean, err := Open(ctx, Options{Blobs: cfg.open(t, 0, nil, 0), Layout: LayoutDeltas})
	if err != nil {
		t.Fatal(err)
	}
	for {
		res, err := clean.Fold(ctx)
		if err != nil {
			t.Fatalf("seed %d: the clean fold: %v", seed, err)
		}
		if res.Deltas == 0 && res.SinkObjects == 0 {
			if res.Left != 0 {
				t.Fatalf("seed %d: the clean fold left %d", seed, res.Left)
			}
			break
		}
	}
	if keys, err := clean.listDeltas(ctx); err != nil || len(keys) != 0 {
		t.Fatalf("seed %d: after the clean fold %d deltas are left (%v)", seed, len(keys), err)
	}
	got, err := clean.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if err := done.within(got, done); err != nil {
		t.Fatalf("seed %d: after the clean fold: %v", seed, err)
	}
	// Each partition read alone returns exactly its share.
	for _, tp := range pick(rand.New(rand.NewPCG(seed, 9)), 8) {
		f := durable.Filter{Partitions: []coverage.TopicPartition{tp}}
		one, err := clean.Coverage(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if err := done.filtered(f).within(one, done.filtered(f)); err != nil {
			t.Fatalf("seed %d: partition %v alone: %v", seed, tp, err)
		}
	}
	forgotten := 0
	for _, p := range plans {
		for _, c := range p {
			ok, err := clean.Landed(ctx, c.Writer, c.Name)
			if err != nil || (!ok && cfg.landed) {
				t.Fatalf("seed %d: %q of %q: Landed %v, %v", seed, c.Name, c.Writer, ok, err)
			}
			if !ok {
				forgotten++
			}
		}
	}
	if forgotten > 0 {
		// A retry of unknown outcome of these would append again: a
		// harmless union, but the fold logs' window was cut short.
		t.Logf("Landed answers false for %d of %d checkpoints folded moments ago", forgotten, cfg.writers*cfg.per)
	}
	t.Logf("%d writers x %d checkpoints, %d appends retried; %d folds (%d failed), %d reads checked (%d failed on faults), %d Landed checks",
		cfg.writers, cfg.per, retries.Load(), folds.Load(), foldErrs.Load(), reads.Load(), failedReads.Load(), landedChecks.Load())
	if reads.Load() == 0 || folds.Load() == 0 {
		t.Fatalf("seed %d: nothing raced: %d reads, %d folds", seed, reads.Load(), folds.Load())
	}
}

// dirFleet opens handles on one directory, each through seeded faults
// (failing and spurious-precondition puts, puts and deletes that fail
// after applying, stale listings) and delays; i == 0 is a clean handle.
func dirFleet(dir string) func(*testing.T, int, *rand.Rand, float64) Blobs {
	gh := &ghosts{}
	return func(t *testing.T, i int, rng *rand.Rand, p float64) Blobs {
		inner, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = inner.Close() })
		if i == 0 {
			return inner
		}
		slow := &slowBlobs{Blobs: inner, rng: rand.New(rand.NewPCG(rng.Uint64(), 2)), p: 0.05, max: 2 * time.Millisecond}
		return &hostileBlobs{flakyBlobs: &flakyBlobs{Blobs: slow, rng: rng, p: p, counts: map[string]int{}}, ghosts: gh}
	}
}

// TestFleetRaceManyWritersTwoFolders: 48 writers on DirBlobs, two folders
// at once, partition-selective readers and Landed probes, every handle
// through faults.
func TestFleetRaceManyWritersTwoFolders(t *testing.T) {
	seed := testseed.Seed(t)
	raceFleet(t, seed, fleetRace{writers: 48, per: 10, open: dirFleet(t.TempDir()), landed: true})
}

// TestFleetRaceFolderClockJumped: as above with the second folder's clock
// an hour ahead, so that it names its fold logs in the future and prunes
// every other fold log as old. Landed may answer false then (a harmless
// re-append); coverage must stay exact.
func TestFleetRaceFolderClockJumped(t *testing.T) {
	seed := testseed.Seed(t)
	raceFleet(t, seed, fleetRace{writers: 16, per: 6, open: dirFleet(t.TempDir()), skew: time.Hour})
}

// TestFoldLogsPrunedByAJumpedClock: a folder whose clock runs an hour
// ahead prunes, as past Options.NameRetention, the fold logs another
// folder wrote a moment ago, so Landed forgets checkpoints folded a
// moment ago. That must cost only a re-append: the checkpoint appended
// again with MayHaveLanded lands, and the coverage is exactly the union.
func TestFoldLogsPrunedByAJumpedClock(t *testing.T) {
	dir := t.TempDir()
	b, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	open := func(skew time.Duration) *Tier {
		s, err := Open(ctx, Options{Blobs: b, Layout: LayoutDeltas, Now: func() time.Time { return time.Now().Add(skew) }})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	tier, ahead := open(0), open(time.Hour)
	c := oneRange("pod-a", "cp-1", "raw", 10)
	if err := tier.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := tier.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := ahead.Fold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	landed, err := tier.Landed(ctx, c.Writer, c.Name)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the folder an hour ahead pruned %d fold logs; Landed of a checkpoint folded a moment ago: %v", res.FoldLogs, landed)
	c.MayHaveLanded = true
	if err := tier.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	if _, err := tier.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	want := model{}
	want.add(c)
	checkBetween(t, "after the re-append", tier, want, want)
	if ok, err := tier.Landed(ctx, c.Writer, c.Name); !ok || err != nil {
		t.Fatalf("after the re-append: Landed %v, %v", ok, err)
	}
}
