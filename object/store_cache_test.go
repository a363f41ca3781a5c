package object

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// TestAppendNoRangesMayHaveLanded: a checkpoint that carries no ranges
// touches no sink, retried or not: nothing to write, nothing to look for,
// and no panic.
func TestAppendNoRangesMayHaveLanded(t *testing.T) {
	s := openDirStore(t, t.TempDir())
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	for _, ranges := range [][]coverage.DestinationRanges{nil, {{Destination: d}}} {
		c := durable.Checkpoint{Writer: "w", Name: "empty", Ranges: ranges, MayHaveLanded: true}
		if err := s.Append(ctx, c); err != nil {
			t.Fatalf("empty checkpoint %v with MayHaveLanded: %v", ranges, err)
		}
	}
	if cov, err := s.Coverage(ctx, durable.Filter{}); err != nil || len(cov) != 0 {
		t.Fatalf("coverage after empty checkpoints: %v, %v", cov, err)
	}
}

// countingBlobs counts Gets, to tell a cached write from a read one.
type countingBlobs struct {
	Blobs
	gets atomic.Int64
}

func (c *countingBlobs) Get(ctx context.Context, key string) ([]byte, string, error) {
	c.gets.Add(1)
	return c.Blobs.Get(ctx, key)
}

// TestCachedVersionABA: DirBlobs versions are content hashes, so a sink
// object that went A -> B -> A (another Tier wrote twice, the second
// time back to the same bytes) is at the version the first Tier cached,
// and its If-Match write goes through without a read. That is sound only
// because the bytes, and so the object, are the cached ones: the test
// builds the sequence for real and checks nothing another Tier wrote is
// lost and nothing unwritten shows.
func TestCachedVersionABA(t *testing.T) {
	dir := t.TempDir()
	frozen := func() time.Time { return time.Unix(1700000000, 0) }
	open := func() (*Tier, *countingBlobs) {
		b, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		cb := &countingBlobs{Blobs: b}
		s, err := Open(ctx, Options{Blobs: cb, Now: frozen})
		if err != nil {
			t.Fatal(err)
		}
		return s, cb
	}
	s1, b1 := open()
	s2, _ := open()
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	ck := func(name string, r coverage.Range) durable.Checkpoint {
		return durable.Checkpoint{Writer: "w", Name: name, Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{r}}}}
	}
	base := coverage.Range{Start: 0, End: 10}
	for i := 1; i <= MaxNamesPerWriter; i++ {
		if err := s1.Append(ctx, ck(fmt.Sprint(i), base)); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, filepath.FromSlash(sinkKey("", "lake")))
	a, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	// The same writer in another process (a restarted pod) writes name 65,
	// which evicts 1, then 1..64 again, each evicting the oldest: the
	// window ends as it began, and the ranges and clock never changed.
	if err := s2.Append(ctx, ck(fmt.Sprint(MaxNamesPerWriter+1), base)); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); bytes.Equal(a, b) {
		t.Fatal("the object did not change (B)")
	}
	for i := 1; i <= MaxNamesPerWriter; i++ {
		if err := s2.Append(ctx, ck(fmt.Sprint(i), base)); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(a, b) {
		t.Fatal("the object did not return to its first bytes (A)")
	}
	gets := b1.gets.Load()
	next := coverage.Range{Start: 20, End: 30}
	if err := s1.Append(ctx, ck("new", next)); err != nil {
		t.Fatal(err)
	}
	if b1.gets.Load() != gets {
		t.Fatal("the first Tier read before writing: the A -> B -> A case was not exercised")
	}
	cov, err := s2.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := coverage.NewRangeSet(base, next)
	if len(cov) != 1 || !cov[d].Equal(&want) {
		t.Fatalf("coverage %v, want %v", cov, want.Ranges())
	}
	if ok, err := s2.Landed(ctx, "w", "new"); !ok || err != nil {
		t.Fatalf("landed: %v, %v", ok, err)
	}
}

// TestOneStoreConcurrentFaults: eight goroutines share one Tier (and so
// its cache of last-written objects) over flaky Blobs, appending to the
// same three sinks; failed appends are retried with MayHaveLanded until
// they land. Coverage never holds a range not yet attempted, always holds
// every acknowledged one, and ends exactly the union.
func TestOneStoreConcurrentFaults(t *testing.T) {
	seed := testseed.Seed(t)
	dir := t.TempDir()
	inner, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	flaky := &flakyBlobs{Blobs: inner, rng: rand.New(rand.NewPCG(seed, 1)), p: 0.1, counts: map[string]int{}}
	s, err := Open(ctx, Options{Blobs: flaky, MaxAttempts: 3, MinBackoff: time.Microsecond, MaxBackoff: 50 * time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	clean := openDirStore(t, dir)
	var mu sync.Mutex
	attempted, committed := model{}, model{}
	sinks := []string{"raw", "lake", "search"}
	const workers, per = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)+2))
			for i := range per {
				c := durable.Checkpoint{Writer: fmt.Sprintf("pod-%d", w%3), Name: fmt.Sprintf("ck-%d-%d", w, i)}
				for range 1 + rng.IntN(3) {
					d := coverage.Destination{Sink: sinks[rng.IntN(len(sinks))], Topic: "t", Partition: int32(rng.IntN(2))}
					start := uint64(rng.IntN(100000))
					c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1 + uint64(rng.IntN(3))}}})
				}
				mu.Lock()
				attempted.add(c)
				mu.Unlock()
				for try := 0; ; try++ {
					err := s.Append(ctx, c)
					if err == nil {
						break
					}
					if errors.Is(err, durable.ErrNameReused) || errors.Is(err, ErrCorruptObject) || try > 50 {
						errs <- fmt.Errorf("%s of %s: %w", c.Name, c.Writer, err)
						return
					}
					c.MayHaveLanded = true
				}
				mu.Lock()
				committed.add(c)
				mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for running := true; running; {
		select {
		case <-done:
			running = false
		case <-time.After(5 * time.Millisecond):
		}
		// Acknowledged before the read, attempted after it: the coverage
		// lies between.
		mu.Lock()
		lower := model{}
		for d, set := range committed {
			c := set.Clone()
			lower[d] = &c
		}
		mu.Unlock()
		got, err := clean.Coverage(ctx, durable.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		checkModelBetween(t, got, attempted, lower)
		mu.Unlock()
	}
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	checkBetween(t, "at the end", clean, attempted, attempted)
	t.Logf("faults %v; stats %+v", flaky.counts, s.Stats())
}

func checkModelBetween(t *testing.T, got map[coverage.Destination]*coverage.RangeSet, upper, lower model) {
	t.Helper()
	for d, set := range got {
		for r := range set.All() {
			if u := upper[d]; u == nil || !u.ContainsRange(r) {
				t.Fatalf("%s covers %v, never appended (a lead)", d, r)
			}
		}
	}
	for d, set := range lower {
		for r := range set.All() {
			if g := got[d]; g == nil || !g.ContainsRange(r) {
				t.Fatalf("%s lacks %v, which an Append acknowledged", d, r)
			}
		}
	}
}

// TestNameReusedPastStaleCache: a Tier checks a checkpoint's name against
// the objects it cached, so a name another process reused since (the same
// writer, another payload) is found only at that sink's conditional write,
// after earlier sinks may have been written. ErrNameReused still comes
// back; the sink that holds the other payload keeps it alone, Landed is
// false for the name, and a retry is refused as well.
func TestNameReusedPastStaleCache(t *testing.T) {
	dir := t.TempDir()
	s1, s2 := openDirStore(t, dir), openDirStore(t, dir)
	a, b := coverage.Destination{Sink: "a", Topic: "t"}, coverage.Destination{Sink: "b", Topic: "t"}
	one := func(d coverage.Destination, start uint64) coverage.DestinationRanges {
		return coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1}}}
	}
	if err := s1.Append(ctx, durable.Checkpoint{Writer: "w", Name: "n1", Ranges: []coverage.DestinationRanges{one(a, 0), one(b, 0)}}); err != nil {
		t.Fatal(err)
	}
	if err := s2.Append(ctx, durable.Checkpoint{Writer: "w", Name: "x", Ranges: []coverage.DestinationRanges{one(b, 5)}}); err != nil {
		t.Fatal(err)
	}
	reused := durable.Checkpoint{Writer: "w", Name: "x", Ranges: []coverage.DestinationRanges{one(a, 10), one(b, 10)}}
	if err := s1.Append(ctx, reused); !errors.Is(err, durable.ErrNameReused) || strings.Contains(err.Error(), "append it again") {
		t.Fatalf("a name reused past the cache: %v, want ErrNameReused, without advice to append again (which cannot succeed)", err)
	}
	cov, err := s2.Coverage(ctx, durable.Filter{Sink: "b"})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := coverage.NewRangeSet(coverage.Range{Start: 0, End: 1}, coverage.Range{Start: 5, End: 6}); !cov[b].Equal(&want) {
		t.Fatalf("sink b covers %v, want %v", cov[b].Ranges(), want.Ranges())
	}
	if ok, err := s2.Landed(ctx, "w", "x"); ok || err != nil {
		t.Fatalf("landed with the name bound to two payloads: %v, %v", ok, err)
	}
	reused.MayHaveLanded = true
	if err := s1.Append(ctx, reused); !errors.Is(err, durable.ErrNameReused) {
		t.Fatalf("the retry: %v, want ErrNameReused", err)
	}
}

// TestLongAndCaseOnlySinkNames: sink names at coverage.MaxNameLen that
// differ only in their last byte (their keys share the cut encoding and
// differ in the hash), and names differing only in case, stay apart on a
// directory, each readable by its own filter.
func TestLongAndCaseOnlySinkNames(t *testing.T) {
	s := openDirStore(t, t.TempDir())
	long := strings.Repeat("é", coverage.MaxNameLen/2-1)
	names := []string{long + "a", long + "b", long + "A", "Lake", "lake", "LAKE", strings.Repeat("\U0001F600", coverage.MaxNameLen/4)}
	m := model{}
	for i, sink := range names {
		c := durable.Checkpoint{Writer: "w", Name: fmt.Sprint(i), Ranges: []coverage.DestinationRanges{{
			Destination: coverage.Destination{Sink: sink, Topic: "t"}, Ranges: []coverage.Range{{Start: uint64(i) * 10, End: uint64(i)*10 + 1}}}}}
		if err := s.Append(ctx, c); err != nil {
			t.Fatalf("sink %d (%d bytes): %v", i, len(sink), err)
		}
		m.add(c)
	}
	checkBetween(t, "all sinks", s, m, m)
	for _, sink := range names {
		cov, err := s.Coverage(ctx, durable.Filter{Sink: sink})
		d := coverage.Destination{Sink: sink, Topic: "t"}
		if err != nil || len(cov) != 1 || !cov[d].Equal(m[d]) {
			t.Fatalf("sink of %d bytes alone: %v, %v", len(sink), cov, err)
		}
	}
}
