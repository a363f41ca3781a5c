package object

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// ghosts are keys deleted through any hostileBlobs of one test, which a
// stale listing may still return.
type ghosts struct {
	mu   sync.Mutex
	keys []string
}

func (g *ghosts) add(k string) {
	g.mu.Lock()
	g.keys = append(g.keys, k)
	g.mu.Unlock()
}

func (g *ghosts) under(prefix string) []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for _, k := range g.keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	return out
}

// hostileBlobs is one process's handle on the store, with every fault a
// real store or network gives, drawn from a seeded generator: a Get that
// fails, a spurious precondition, a Put that fails before or after it
// applies, a Delete that fails before or after it applies, a List that
// fails or still lists keys deleted a moment ago (an eventually consistent
// listing, which S3-compatible stores can give).
type hostileBlobs struct {
	*flakyBlobs
	ghosts *ghosts
}

func (h *hostileBlobs) Delete(ctx context.Context, key string) error {
	switch {
	case h.draw("delete fails before"):
		return fmt.Errorf("delete %s before: %w", key, errInjected)
	}
	err := h.Blobs.Delete(ctx, key)
	if err == nil {
		h.ghosts.add(key)
		if h.draw("delete fails after") {
			return fmt.Errorf("delete %s after: %w", key, errInjected)
		}
	}
	return err
}

func (h *hostileBlobs) List(ctx context.Context, prefix string) ([]string, error) {
	if h.draw("list fails") {
		return nil, fmt.Errorf("list %s: %w", prefix, errInjected)
	}
	keys, err := h.Blobs.List(ctx, prefix)
	if err != nil || !h.draw("stale list") {
		return keys, err
	}
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k] = true
	}
	for _, k := range h.ghosts.under(prefix) {
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// hostileNames are writer and checkpoint names no key may be built of
// naively.
var hostileNames = []string{"pod", "a/b", "..", "../../etc", "/", "", "ünïcödé-ポッド", "\x00\x01\n\t", strings.Repeat("w", 300), strings.Repeat("é", 200), "deltas", "x/"}

// TestHostileFleetRace: 32 processes (each its own Blobs handle through
// hostile faults, writer names built of hostileNames, four of them still
// on the sinks layout) append while three folders fold and three readers
// read, through faults too. A failed append is appended again with
// MayHaveLanded until it returns nil. A read must hold every append that
// returned nil before it began and nothing nobody appended; a read that
// fails is allowed (the faults), a wrong one is not.
func TestHostileFleetRace(t *testing.T) {
	seed := testseed.Seed(t)
	dir := t.TempDir()
	gh := &ghosts{}
	var handles atomic.Uint64
	open := func(layout Layout, p float64, maxFold int) *Tier {
		inner, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = inner.Close() })
		b := &hostileBlobs{flakyBlobs: &flakyBlobs{Blobs: inner, rng: rand.New(rand.NewPCG(seed, 1000+handles.Add(1))), p: p, counts: map[string]int{}}, ghosts: gh}
		s, err := Open(ctx, Options{Blobs: b, Layout: layout, MaxAttempts: 4, MinBackoff: time.Microsecond, MaxBackoff: 50 * time.Microsecond, MaxFoldDeltas: maxFold, Parallel: 4})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	const writers, per = 32, 12
	sinks := []string{"raw", "lake/β", "..", "s p a c e"}
	topics := []string{"orders", "../t", "тема", "x/y"}
	parts := []int32{0, 1, GroupSize - 1, GroupSize, 5 * GroupSize, math.MaxInt32 - GroupSize, math.MaxInt32 - 1, math.MaxInt32}
	all := model{}
	plans := make([][]durable.Checkpoint, writers)
	rng := rand.New(rand.NewPCG(seed, 1))
	for w := range writers {
		writer := fmt.Sprintf("%s%d", hostileNames[w%len(hostileNames)], w)
		for i := range per {
			c := durable.Checkpoint{Writer: writer, Name: hostileNames[(i+w)%len(hostileNames)] + fmt.Sprint(i)}
			for range 1 + rng.IntN(4) {
				d := coverage.Destination{Sink: sinks[rng.IntN(len(sinks))], Topic: topics[rng.IntN(len(topics))], Partition: parts[rng.IntN(len(parts))]}
				start := uint64(rng.IntN(2000))
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1 + uint64(rng.IntN(9))}}})
			}
			plans[w] = append(plans[w], c)
			all.add(c)
		}
	}
	var (
		mu   sync.Mutex
		done = model{}
	)
	errs := make(chan error, 64)
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var folds, reads, failedReads atomic.Int64
	for f := range 3 {
		tier := open(LayoutDeltas, 0.05, []int{3, 17, 0}[f])
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := tier.Fold(ctx); err == nil {
					folds.Add(1)
				}
			}
		})
	}
	filters := []func(*rand.Rand) durable.Filter{
		func(*rand.Rand) durable.Filter { return durable.Filter{} },
		func(r *rand.Rand) durable.Filter { return durable.Filter{Sink: sinks[r.IntN(len(sinks))]} },
		func(r *rand.Rand) durable.Filter {
			p := parts[r.IntN(len(parts))]
			return durable.Filter{Topic: topics[r.IntN(len(topics))], Partition: &p}
		},
	}
	for r := range 3 {
		tier := open(LayoutDeltas, 0.03, 0)
		rrng := rand.New(rand.NewPCG(seed, 500+uint64(r)))
		bg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				f := filters[r](rrng)
				mu.Lock()
				before := done.clone()
				mu.Unlock()
				got, err := tier.Coverage(ctx, f)
				if err != nil {
					if !errors.Is(err, errInjected) {
						errs <- fmt.Errorf("reader %d: %w", r, err)
						return
					}
					failedReads.Add(1)
					continue
				}
				reads.Add(1)
				if err := before.filtered(f).within(got, all); err != nil {
					errs <- fmt.Errorf("reader %d filter %+v (seed %d): %w", r, f, seed, err)
					return
				}
			}
		})
	}
	var wg sync.WaitGroup
	for w := range writers {
		layout := LayoutDeltas
		if w%8 == 7 {
			layout = LayoutSinkObjects
		}
		tier := open(layout, 0.05, 0)
		wg.Go(func() {
			for _, c := range plans[w] {
				for attempt := 0; ; attempt++ {
					err := tier.Append(ctx, c)
					if err == nil {
						break
					}
					if errors.Is(err, durable.ErrNameReused) || errors.Is(err, ErrCorruptObject) || attempt > 200 {
						errs <- fmt.Errorf("writer %d %q: %w", w, c.Name, err)
						return
					}
					c.MayHaveLanded = true
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
	clean := openDeltas(t, dir)
	for {
		res, err := clean.Fold(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if res.Deltas == 0 && res.SinkObjects == 0 {
			break
		}
	}
	got, err := clean.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if err := all.within(got, all); err != nil {
		t.Fatalf("seed %d: after the last fold: %v", seed, err)
	}
	for _, p := range plans {
		for _, c := range p {
			if ok, err := clean.Landed(ctx, c.Writer, c.Name); !ok || err != nil {
				t.Fatalf("seed %d: %q of %q: Landed %v, %v", seed, c.Name, c.Writer, ok, err)
			}
		}
	}
	t.Logf("%d folds, %d reads checked, %d reads failed on injected faults", folds.Load(), reads.Load(), failedReads.Load())
	if reads.Load() == 0 {
		t.Fatal("no read was checked")
	}
}

// filtered is m restricted to what f selects.
func (m model) filtered(f durable.Filter) model {
	out := model{}
	for d, s := range m {
		if f.Match(d) {
			out[d] = s
		}
	}
	return out
}
