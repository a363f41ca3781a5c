package object

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// chaosBlobs wraps a real Blobs with seeded faults: a Get that fails, a Put
// refused with a spurious ErrPrecondition or failing before it writes, and
// a Put that writes and then answers an error or a cancelled context.
type chaosBlobs struct {
	Blobs
	mu     sync.Mutex
	rng    *rand.Rand
	p      float64
	counts map[string]int
}

func (c *chaosBlobs) draw(what string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	hit := c.rng.Float64() < c.p
	if hit {
		c.counts[what]++
	}
	return hit
}

func (c *chaosBlobs) Get(ctx context.Context, key string) ([]byte, string, error) {
	if c.draw("get fails") {
		return nil, "", fmt.Errorf("get %s: %w", key, errInjected)
	}
	return c.Blobs.Get(ctx, key)
}

func (c *chaosBlobs) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	switch {
	case c.draw("spurious precondition"):
		return "", fmt.Errorf("%w: injected", ErrPrecondition)
	case c.draw("put fails before"):
		return "", fmt.Errorf("put %s: %w", key, errInjected)
	case c.draw("cancelled before"):
		return "", fmt.Errorf("put %s: %w", key, context.Canceled)
	}
	v, err := c.Blobs.Put(ctx, key, data, ifMatch)
	if err == nil && c.draw("put fails after") {
		return "", fmt.Errorf("put %s after writing: %w", key, errInjected)
	}
	if err == nil && c.draw("cancelled after") {
		return "", fmt.Errorf("put %s after writing: %w", key, context.Canceled)
	}
	return v, err
}

// sentinel fills the spare capacity of a caller's slices: the Tier must
// never write there (nor anywhere in them).
var sentinel = coverage.Range{Start: 7777, End: 8888}

// mergedCheckpoint builds a checkpoint already in the form
// durable.MergeRanges returns (so the Tier gets the caller's own slices),
// each slice with spare capacity holding sentinels.
func mergedCheckpoint(writer, name string, sets map[coverage.Destination]*coverage.RangeSet) durable.Checkpoint {
	dests := make([]coverage.Destination, 0, len(sets))
	for d := range sets {
		dests = append(dests, d)
	}
	slices.SortFunc(dests, coverage.Destination.Compare)
	drs := make([]coverage.DestinationRanges, len(dests), len(dests)+2)
	for i, d := range dests {
		rs := sets[d].Ranges()
		buf := make([]coverage.Range, len(rs)+3)
		copy(buf, rs)
		for j := len(rs); j < len(buf); j++ {
			buf[j] = sentinel
		}
		drs[i] = coverage.DestinationRanges{Destination: d, Ranges: buf[:len(rs)]}
	}
	spare := drs[:cap(drs)]
	for i := len(drs); i < cap(drs); i++ {
		spare[i] = coverage.DestinationRanges{Destination: coverage.Destination{Sink: "sentinel", Topic: "t"}, Ranges: []coverage.Range{sentinel}}
	}
	return durable.Checkpoint{Writer: writer, Name: name, Ranges: drs}
}

// deepCopy copies a checkpoint's slices out to their capacity.
func deepCopy(c durable.Checkpoint) [][]coverage.Range {
	all := c.Ranges[:cap(c.Ranges)]
	out := make([][]coverage.Range, len(all))
	for i, dr := range all {
		out[i] = slices.Clone(dr.Ranges[:cap(dr.Ranges)])
	}
	return out
}

func sameDeep(c durable.Checkpoint, snap [][]coverage.Range) bool {
	all := c.Ranges[:cap(c.Ranges)]
	if len(all) != len(snap) {
		return false
	}
	for i, dr := range all {
		if !slices.Equal(dr.Ranges[:cap(dr.Ranges)], snap[i]) {
			return false
		}
	}
	return true
}

// checkCacheCoherent: every object a Tier keeps as last written, whose
// version is still the stored one, is the stored object (the same bytes
// encoded from it, with its kept encodings and afresh); an entry at
// another version is only stale.
func checkCacheCoherent(t *testing.T, s *Tier, blobs Blobs) int {
	t.Helper()
	s.lastMu.Lock()
	defer s.lastMu.Unlock()
	current := 0
	for key, c := range s.last {
		data, version, err := blobs.Get(ctx, key)
		if err != nil {
			t.Fatalf("cached %s: %v", key, err)
		}
		kept := encodeObject(c.o)
		fresh := *c.o
		fresh.Dests = slices.Clone(c.o.Dests)
		for i := range fresh.Dests {
			fresh.Dests[i].encoded = nil
		}
		if !bytes.Equal(kept, encodeObject(&fresh)) {
			t.Fatalf("cached %s: its kept encodings disagree with its ranges", key)
		}
		if version != c.version {
			continue
		}
		current++
		if !bytes.Equal(kept, data) {
			t.Fatalf("cached %s at the stored version %s differs from the stored bytes", key, version)
		}
	}
	return current
}

// TestInPlaceMergeAliasing: goroutines share one Tier over faulty Blobs
// (spurious preconditions, failures and cancellations before and after a
// write lands) while a second Tier writes the same sinks. Checkpoints are
// handed over already merged, so the Tier holds the callers' own slices,
// which carry sentinels in their spare capacity; some are appended by two
// goroutines at once. Ranges both extend destinations and fall among
// their old ranges, so merges take both the append and the rewrite path.
// After every Append the caller's slices are as they were; coverage never
// leads what was attempted nor lags what was acknowledged; at the end
// every pending checkpoint lands, coverage is exactly the union, and each
// cached object at the stored version is the stored object.
func TestInPlaceMergeAliasing(t *testing.T) {
	seed := testseed.Seed(t)
	dir := t.TempDir()
	inner, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	chaos := &chaosBlobs{Blobs: inner, rng: rand.New(rand.NewPCG(seed, 1)), p: 0.03, counts: map[string]int{}}
	s, err := Open(ctx, Options{Blobs: chaos, MaxAttempts: 4, MinBackoff: time.Microsecond, MaxBackoff: 20 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	other := openDirStore(t, dir)
	sinks := []string{"raw", "lake", "search"}

	var mu sync.Mutex
	attempted, committed := model{}, model{}
	var pending []durable.Checkpoint
	const workers, per = 6, 60
	shared := make(chan durable.Checkpoint, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers+2)
	for w := range workers + 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)+2))
			store := s
			if w == workers {
				store = other // another process on the same sinks
			}
			next := map[coverage.Destination]uint64{}
			for i := range per {
				var c durable.Checkpoint
				if w > 0 && w < workers && rng.IntN(6) == 0 {
					select {
					case c = <-shared: // another goroutine's checkpoint, slices and all
					default:
					}
				}
				if c.Name == "" {
					sets := map[coverage.Destination]*coverage.RangeSet{}
					for range 1 + rng.IntN(5) {
						d := coverage.Destination{Sink: sinks[rng.IntN(len(sinks))], Topic: fmt.Sprint("t", rng.IntN(2)), Partition: int32(rng.IntN(3))}
						start := next[d] + 1 + rng.Uint64N(3)
						if rng.IntN(3) == 0 {
							start = rng.Uint64N(next[d] + 1) // among what is there
						}
						end := start + 1 + rng.Uint64N(4)
						next[d] = max(next[d], end)
						if sets[d] == nil {
							sets[d] = new(coverage.RangeSet)
						}
						_ = sets[d].Add(coverage.Range{Start: start*1000 + uint64(w), End: end*1000 + uint64(w)})
					}
					c = mergedCheckpoint(fmt.Sprint("pod-", w), fmt.Sprint("ck-", i), sets)
					if w == 0 {
						select {
						case shared <- c:
						default:
						}
					}
				}
				if merged := durable.MergeRanges(c.Ranges); &merged[0] != &c.Ranges[0] {
					errs <- fmt.Errorf("%s of %s: not handed over in merged form", c.Name, c.Writer)
					return
				}
				snap := deepCopy(c)
				mu.Lock()
				attempted.add(c)
				mu.Unlock()
				err := store.Append(ctx, c)
				if !sameDeep(c, snap) {
					errs <- fmt.Errorf("%s of %s: Append changed the caller's slices", c.Name, c.Writer)
					return
				}
				switch {
				case err == nil:
					mu.Lock()
					committed.add(c)
					mu.Unlock()
				case errors.Is(err, durable.ErrNameReused) || unreadable(err):
					errs <- fmt.Errorf("%s of %s: %w", c.Name, c.Writer, err)
					return
				default:
					c.MayHaveLanded = true
					mu.Lock()
					pending = append(pending, c)
					mu.Unlock()
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(3 * time.Millisecond):
		}
		mu.Lock()
		lower := model{}
		for d, set := range committed {
			c := set.Clone()
			lower[d] = &c
		}
		mu.Unlock()
		got, err := other.Coverage(ctx, durable.Filter{})
		if err == nil {
			mu.Lock()
			err = modelBetween(got, attempted, lower)
			mu.Unlock()
		}
		if err != nil {
			errs <- err
			<-done // the workers use the Blobs the test closes
			break
		}
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	n := checkCacheCoherent(t, s, inner)
	// The Tier itself, through its cache, now without faults, lands the
	// pending ones.
	chaos.mu.Lock()
	chaos.p = 0
	chaos.mu.Unlock()
	for _, c := range pending {
		if err := s.Append(ctx, c); err != nil {
			t.Fatalf("pending %s of %s: %v", c.Name, c.Writer, err)
		}
		if ok, err := other.Landed(ctx, c.Writer, c.Name); !ok || err != nil {
			t.Fatalf("pending %s of %s: landed %v, %v", c.Name, c.Writer, ok, err)
		}
	}
	checkBetween(t, "at the end", other, attempted, attempted)
	m := checkCacheCoherent(t, s, inner)
	t.Logf("%d pending; cached objects at the stored version: %d mid-way, %d at the end; faults %v; stats %+v", len(pending), n, m, chaos.counts, s.Stats())
}

// modelBetween is checkModelBetween as an error, for a check made while
// goroutines still run.
func modelBetween(got map[coverage.Destination]*coverage.RangeSet, upper, lower model) error {
	for d, set := range got {
		for r := range set.All() {
			if u := upper[d]; u == nil || !u.ContainsRange(r) {
				return fmt.Errorf("%s covers %v, never appended (a lead)", d, r)
			}
		}
	}
	for d, set := range lower {
		for r := range set.All() {
			if g := got[d]; g == nil || !g.ContainsRange(r) {
				return fmt.Errorf("%s lacks %v, which an Append acknowledged", d, r)
			}
		}
	}
	return nil
}

// failingPut refuses the next Puts it is armed for, to one key or to any
// (""), with err, writing nothing.
type failingPut struct {
	Blobs
	mu    sync.Mutex
	fails map[string]int
	err   error
}

func (f *failingPut) arm(key string, n int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fails[key], f.err = n, err
}

func (f *failingPut) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	f.mu.Lock()
	var fail bool
	for _, k := range []string{key, ""} {
		if f.fails[k] > 0 {
			f.fails[k]--
			fail = true
			break
		}
	}
	err := f.err
	f.mu.Unlock()
	if fail {
		return "", err
	}
	return f.Blobs.Put(ctx, key, data, ifMatch)
}

// TestFailedWriteNeverReused: a checkpoint merged into a sink's cached
// object whose every write is refused (a precondition, a failure, a
// cancelled context: none of them wrote) must not reach the store with a
// later checkpoint of the same Tier, on one sink or across two where the
// first did land; the half-landed one is not Landed, and its retry skips
// the sink that holds it and lands.
func TestFailedWriteNeverReused(t *testing.T) {
	for _, failure := range []error{
		fmt.Errorf("%w: injected", ErrPrecondition),
		fmt.Errorf("injected: %w", errInjected),
		fmt.Errorf("injected: %w", context.Canceled),
	} {
		t.Run(failure.Error(), func(t *testing.T) {
			dir := t.TempDir()
			inner, err := OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer inner.Close()
			fp := &failingPut{Blobs: inner, fails: map[string]int{}}
			s, err := Open(ctx, Options{Blobs: fp, MaxAttempts: 2, MinBackoff: time.Microsecond, MaxBackoff: time.Microsecond})
			if err != nil {
				t.Fatal(err)
			}
			clean := openDirStore(t, dir)
			a, b := coverage.Destination{Sink: "a", Topic: "t"}, coverage.Destination{Sink: "b", Topic: "t"}
			ck := func(name string, start uint64, ds ...coverage.Destination) durable.Checkpoint {
				c := durable.Checkpoint{Writer: "w", Name: name}
				for _, d := range ds {
					c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1}}})
				}
				return c
			}
			committed := model{}
			must := func(c durable.Checkpoint) {
				t.Helper()
				if err := s.Append(ctx, c); err != nil {
					t.Fatal(err)
				}
				committed.add(c)
			}
			must(ck("first", 0, a, b)) // both objects cached
			// One sink: every attempt refused, on the cached object and on
			// the one read back.
			fp.arm("", 2, failure)
			if err := s.Append(ctx, ck("lost", 10, a)); err == nil {
				t.Fatal("an append whose every write failed returned nil")
			}
			must(ck("after", 20, a))
			checkBetween(t, "one sink", clean, committed, committed)

			// Two sinks: a lands, b's every attempt is refused.
			must(ck("recache", 30, a, b))
			half := ck("half", 40, a, b)
			fp.arm(sinkKey("", "b"), 2, failure)
			if err := s.Append(ctx, half); err == nil {
				t.Fatal("an append whose second sink failed returned nil")
			}
			if ok, err := clean.Landed(ctx, "w", "half"); ok || err != nil {
				t.Fatalf("a half-written checkpoint landed: %v, %v", ok, err)
			}
			must(ck("next", 50, a, b))
			committed.add(ck("", 40, a)) // landed, though the Append failed
			checkBetween(t, "two sinks", clean, committed, committed)

			half.MayHaveLanded = true
			before := s.Stats().Skipped
			if err := s.Append(ctx, half); err != nil {
				t.Fatal(err)
			}
			if n := s.Stats().Skipped - before; n != 1 {
				t.Fatalf("the retry skipped %d sinks, want 1 (a)", n)
			}
			if ok, err := clean.Landed(ctx, "w", "half"); !ok || err != nil {
				t.Fatalf("the retried checkpoint: landed %v, %v", ok, err)
			}
			committed.add(half)
			checkBetween(t, "retried", clean, committed, committed)
			checkCacheCoherent(t, s, inner)
		})
	}
}

// TestUnreadableAfterCachingLeftAsIs: a Tier that cached a sink's object
// finds it replaced by one it cannot read (a newer format, or damage);
// its next append to that sink, cached or retried, fails naming it and
// leaves the bytes as they are, while appends to other sinks and their
// Landed go on.
func TestUnreadableAfterCachingLeftAsIs(t *testing.T) {
	for name, damage := range map[string]func([]byte) []byte{
		"newer version": func(b []byte) []byte { b = slices.Clone(b); b[len(formatMagic)] = formatVersion + 1; return b },
		"bad checksum":  func(b []byte) []byte { b = slices.Clone(b); b[len(b)-1] ^= 1; return b },
		"truncated":     func(b []byte) []byte { return slices.Clone(b[:len(b)-5]) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openDirStore(t, dir)
			raw, err := OpenDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			a, b := coverage.Destination{Sink: "a", Topic: "t"}, coverage.Destination{Sink: "b", Topic: "t"}
			one := func(d coverage.Destination, start uint64) coverage.DestinationRanges {
				return coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1}}}
			}
			if err := s.Append(ctx, durable.Checkpoint{Writer: "w", Name: "1", Ranges: []coverage.DestinationRanges{one(a, 0), one(b, 0)}}); err != nil {
				t.Fatal(err)
			}
			key := sinkKey("", "b")
			data, version, err := raw.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			bad := damage(data)
			if _, err := raw.Put(ctx, key, bad, version); err != nil {
				t.Fatal(err)
			}
			for _, may := range []bool{false, true, false} {
				c := durable.Checkpoint{Writer: "w", Name: fmt.Sprint("2-", may), Ranges: []coverage.DestinationRanges{one(a, 5), one(b, 5)}, MayHaveLanded: may}
				if err := s.Append(ctx, c); !unreadable(err) {
					t.Fatalf("append to the damaged sink (MayHaveLanded %v): %v, want it named unreadable", may, err)
				}
				if now, _, err := raw.Get(ctx, key); err != nil || !bytes.Equal(now, bad) {
					t.Fatalf("the damaged object was rewritten (MayHaveLanded %v): %v", may, err)
				}
				if ok, err := s.Landed(ctx, "w", c.Name); ok || err != nil {
					t.Fatalf("landed %v, %v for a checkpoint the damaged sink refused", ok, err)
				}
			}
			c := durable.Checkpoint{Writer: "w", Name: "3", Ranges: []coverage.DestinationRanges{one(a, 9)}, MayHaveLanded: true}
			if err := s.Append(ctx, c); err != nil {
				t.Fatalf("another sink's retry behind the damaged one: %v", err)
			}
			if ok, err := s.Landed(ctx, "w", "3"); !ok || err != nil {
				t.Fatalf("another sink's checkpoint: landed %v, %v", ok, err)
			}
			if now, _, err := raw.Get(ctx, key); err != nil || !bytes.Equal(now, bad) {
				t.Fatalf("the damaged object was rewritten: %v", err)
			}
		})
	}
}
