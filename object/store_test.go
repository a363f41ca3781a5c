package object

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/durable/durabletest"
)

var ctx = context.Background()

// openDirStore opens a DirBlobs and a Tier on dir, as another process
// would.
func openDirStore(t testing.TB, dir string) *Tier {
	t.Helper()
	blobs, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blobs.Close() })
	s, err := Open(ctx, Options{Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformanceDir(t *testing.T) {
	durabletest.Run(t, durabletest.Harness{New: func(t *testing.T) func(t *testing.T) durable.Tier {
		dir := t.TempDir()
		return func(t *testing.T) durable.Tier { return openDirStore(t, dir) }
	}})
}

func TestSinkKeys(t *testing.T) {
	names := []string{"a/b", "..", ".", "A", "a", strings.Repeat("x", 1024), strings.Repeat("x", 1023) + "y", "ünï", "a\\b"}
	seen := map[string]string{}
	for _, n := range names {
		k := sinkKey("", n)
		if other, dup := seen[k]; dup {
			t.Fatalf("%q and %q share key %s", n, other, k)
		}
		seen[k] = n
		if _, err := (&DirBlobs{dir: "/x"}).path(k); err != nil || len(k) > 220 || strings.ToLower(k) != k {
			t.Fatalf("key %q of %q: %v", k, n, err)
		}
	}
}

// TestConcurrentStoresUnion: eight Stores on one directory, each with its
// own DirBlobs (as processes would be), append 50 checkpoints each to the
// same two sinks; the result is exactly the union.
func TestConcurrentStoresUnion(t *testing.T) {
	dir := t.TempDir()
	const writers, per = 8, 50
	stores := make([]*Tier, writers)
	for i := range stores {
		stores[i] = openDirStore(t, dir)
	}
	want := map[coverage.Destination]*coverage.RangeSet{}
	cks := make([][]durable.Checkpoint, writers)
	for w := range writers {
		for i := range per {
			var c durable.Checkpoint
			c.Writer, c.Name = fmt.Sprintf("pod-%d", w), fmt.Sprintf("ck-%d", i)
			for _, sink := range []string{"raw", "lake"} {
				d := coverage.Destination{Sink: sink, Topic: "orders", Partition: int32(i % 2)}
				// Disjoint, non-touching ranges per writer and checkpoint,
				// so a dropped one shows.
				start := uint64((i*writers+w)*10 + len(sink))
				r := coverage.Range{Start: start, End: start + 3}
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{r}})
				if want[d] == nil {
					want[d] = new(coverage.RangeSet)
				}
				_ = want[d].Add(r)
			}
			cks[w] = append(cks[w], c)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for _, c := range cks[w] {
				if err := stores[w].Append(ctx, c); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := openDirStore(t, dir).Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d destinations, want %d", len(got), len(want))
	}
	for d, w := range want {
		if !got[d].Equal(w) {
			t.Fatalf("%s: %v, want %v", d, got[d], w)
		}
	}
	var total Stats
	for _, s := range stores {
		st := s.Stats()
		total.Appends += st.Appends
		total.Writes += st.Writes
		total.Preconditions += st.Preconditions
		total.Unknown += st.Unknown
	}
	if total.Appends != writers*per || total.Writes != 2*writers*per || total.Unknown != 0 {
		t.Fatalf("stats %+v", total)
	}
	t.Logf("%d writers x %d checkpoints on 2 sinks: %d writes, %d preconditions failed", writers, per, total.Writes, total.Preconditions)
}

// TestLandedPartly: a checkpoint written to one of its two sinks has not
// landed; its retry writes the other and skips the first.
func TestLandedPartly(t *testing.T) {
	dir := t.TempDir()
	s := openDirStore(t, dir)
	d1, d2 := coverage.Destination{Sink: "a", Topic: "t"}, coverage.Destination{Sink: "b", Topic: "t"}
	c := durable.Checkpoint{Writer: "w", Name: "n", Ranges: []coverage.DestinationRanges{
		{Destination: d1, Ranges: []coverage.Range{{Start: 0, End: 5}}}, {Destination: d2, Ranges: []coverage.Range{{Start: 5, End: 9}}}}}
	parts, err := split(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.write(ctx, "a", parts["a"], &sinkObject{Sink: "a"}, ""); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Landed(ctx, "w", "n"); ok || err != nil {
		t.Fatalf("landed after one of two sinks: %v, %v", ok, err)
	}
	c.MayHaveLanded = true
	if err := s.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Landed(ctx, "w", "n"); !ok || err != nil {
		t.Fatalf("landed after the retry: %v, %v", ok, err)
	}
	if st := s.Stats(); st.Skipped != 1 || st.Writes != 2 {
		t.Fatalf("stats %+v", st)
	}
	// The same name with ranges for another sink alone is found with
	// MayHaveLanded, and nothing is written.
	reused := durable.Checkpoint{Writer: "w", Name: "n", MayHaveLanded: true, Ranges: []coverage.DestinationRanges{
		{Destination: coverage.Destination{Sink: "c", Topic: "t"}, Ranges: []coverage.Range{{Start: 0, End: 1}}}}}
	if err := s.Append(ctx, reused); !errors.Is(err, durable.ErrNameReused) {
		t.Fatalf("reused name on another sink: %v", err)
	}
	if cov, _ := s.Coverage(ctx, durable.Filter{Sink: "c"}); len(cov) != 0 {
		t.Fatalf("reused name wrote %v", cov)
	}
}

// TestCorruptObjectRefused: a flipped byte makes Append and Coverage fail
// with ErrCorruptObject naming the key, and the object stays as it is;
// other sinks' checkpoints, retries included, go on.
func TestCorruptObjectRefused(t *testing.T) {
	dir := t.TempDir()
	s := openDirStore(t, dir)
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	ck := func(name string) durable.Checkpoint {
		return durable.Checkpoint{Writer: "w", Name: name, Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 0, End: 5}}}}}
	}
	if err := s.Append(ctx, ck("1")); err != nil {
		t.Fatal(err)
	}
	key := sinkKey("", "lake")
	p := filepath.Join(dir, filepath.FromSlash(key))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []durable.Filter{{}, {Sink: "lake"}} {
		if _, err := s.Coverage(ctx, f); !errors.Is(err, ErrCorruptObject) || !strings.Contains(err.Error(), key) {
			t.Fatalf("coverage %+v of a corrupt object: %v", f, err)
		}
	}
	if err := s.Append(ctx, ck("2")); !errors.Is(err, ErrCorruptObject) || !strings.Contains(err.Error(), key) {
		t.Fatalf("append to a corrupt object: %v", err)
	}
	if err := s.Append(ctx, ck("2")); err == nil || strings.Contains(err.Error(), "append it again") {
		t.Fatalf("the advice on a corrupt object is to append again, which cannot succeed: %v", err)
	}
	// What the corrupt object holds cannot be found: not landed, which
	// costs a re-append, and that re-append refuses the object again.
	if landed, err := s.Landed(ctx, "w", "1"); landed || err != nil {
		t.Fatalf("landed over a corrupt object: %v, %v", landed, err)
	}
	// Another sink's retry after an unknown outcome is not held up by it.
	other := durable.Checkpoint{Writer: "w", Name: "3", MayHaveLanded: true,
		Ranges: []coverage.DestinationRanges{{Destination: d.WithSink("search"), Ranges: []coverage.Range{{Start: 0, End: 5}}}}}
	if err := s.Append(ctx, other); err != nil {
		t.Fatalf("a retry into another sink, beside a corrupt object: %v", err)
	}
	if landed, err := s.Landed(ctx, "w", "3"); !landed || err != nil {
		t.Fatalf("landed of the other sink's checkpoint: %v, %v", landed, err)
	}
	if after, _ := os.ReadFile(p); !bytes.Equal(after, data) {
		t.Fatal("the corrupt object was overwritten")
	}
}

// TestRecentNamesBounded: a sink's object keeps a writer's last
// MaxNamesPerWriter names and the MaxWriters writers written last.
func TestRecentNamesBounded(t *testing.T) {
	o := &sinkObject{Sink: "lake"}
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	add := func(writer, name string, now int64) {
		r := coverage.Range{Start: uint64(now), End: uint64(now) + 1}
		o.apply(&part{writer: writer, name: name, sinks: 1, dests: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{r}}}}, now)
	}
	for i := range 100 {
		add("w", fmt.Sprint(i), int64(i))
	}
	for i := range MaxWriters + 10 {
		add(fmt.Sprintf("other-%03d", i), "x", int64(1000+i))
	}
	if _, ok := o.lookup("w", "99"); ok {
		t.Fatal("the oldest writer was kept past MaxWriters")
	}
	if len(o.Writers) != MaxWriters {
		t.Fatalf("%d writers kept", len(o.Writers))
	}
	// "w" went first, then the ten oldest others.
	for i := range 11 {
		if _, ok := o.lookup(fmt.Sprintf("other-%03d", i), "x"); ok != (i == 10) {
			t.Fatalf("writer %d kept: %v", i, ok)
		}
	}
	o = &sinkObject{Sink: "lake"}
	for i := range 100 {
		add("w", fmt.Sprint(i), int64(i))
	}
	if _, ok := o.lookup("w", "35"); ok {
		t.Fatal("name 35 kept past MaxNamesPerWriter")
	}
	if _, ok := o.lookup("w", "36"); !ok || len(o.Writers[0].Names) != MaxNamesPerWriter {
		t.Fatalf("the last %d names were not kept: %d", MaxNamesPerWriter, len(o.Writers[0].Names))
	}
	if got := o.Dests[0].Ranges; len(got) != 1 || got[0] != (coverage.Range{Start: 0, End: 100}) {
		t.Fatalf("ranges %v", got)
	}
}
