package object

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// TestFoldMigratesSinkObjects: a location written in the sinks layout is
// read by a deltas writer, folded into bases (the sink objects emptied,
// their names kept), and a process still writing sink objects afterwards
// loses nothing.
func TestFoldMigratesSinkObjects(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 3))
	dir := t.TempDir()
	old, cur := openDirStore(t, dir), openDeltas(t, dir)
	m := model{}
	var names []durable.Checkpoint
	for i := range 20 {
		c := spread(rng, "old-pod", fmt.Sprintf("ck-%d", i))
		if err := old.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
		m.add(c)
		names = append(names, c)
	}
	for i := range 20 {
		c := spread(rng, "new-pod", fmt.Sprintf("ck-%d", i))
		if err := cur.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
		m.add(c)
		names = append(names, c)
	}
	checkBetween(t, "before the fold", cur, m, m)
	res, err := cur.Fold(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Deltas != 20 || res.SinkObjects != 3 || res.Left != 0 {
		t.Fatalf("fold: %+v, want 20 deltas and 3 sink objects folded, none left", res)
	}
	checkBetween(t, "after the fold", cur, m, m)
	checkBetween(t, "after the fold, read by the old layout's process", old, m, m)
	keys, err := cur.list(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range keys {
		o, _, err := cur.read(ctx, key, "")
		if err != nil || len(o.Dests) != 0 || len(o.Writers) == 0 {
			t.Fatalf("sink object %s after the fold: %d destinations, %d writers (%v); want none and its names", key, len(o.Dests), len(o.Writers), err)
		}
	}
	for _, c := range names {
		if ok, err := cur.Landed(ctx, c.Writer, c.Name); !ok || err != nil {
			t.Fatalf("%s of %s after the fold: Landed %v, %v", c.Name, c.Writer, ok, err)
		}
	}
	// A process still on the sinks layout writes on.
	c := spread(rng, "old-pod", "ck-late")
	if err := old.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	m.add(c)
	checkBetween(t, "a sink object written after the fold", cur, m, m)
	if _, err := cur.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	checkBetween(t, "folded again", cur, m, m)
}

// putSizes counts the bytes each Put writes.
type putSizes struct {
	Blobs
	mu   sync.Mutex
	puts []int
}

func (c *putSizes) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	c.mu.Lock()
	c.puts = append(c.puts, len(data))
	c.mu.Unlock()
	return c.Blobs.Put(ctx, key, data, ifMatch)
}

func (c *putSizes) take() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.puts
	c.puts = nil
	return out
}

// TestDeltaBytesFollowTheCheckpoint: a checkpoint writes one object whose
// size follows what it carries, however much the location already holds,
// where the sinks layout rewrites each sink's whole object.
func TestDeltaBytesFollowTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	inner, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	counting := &putSizes{Blobs: inner}
	big := durable.Checkpoint{Writer: "seed", Name: "big"}
	for p := range int32(5000) {
		for _, sink := range []string{"raw", "lake"} {
			big.Ranges = append(big.Ranges, coverage.DestinationRanges{Destination: coverage.Destination{Sink: sink, Topic: "orders", Partition: p},
				Ranges: []coverage.Range{{Start: 0, End: 100}, {Start: 200, End: 300}}})
		}
	}
	small := func(name string) durable.Checkpoint {
		return durable.Checkpoint{Writer: "pod-a", Name: name, Ranges: []coverage.DestinationRanges{
			{Destination: coverage.Destination{Sink: "raw", Topic: "orders", Partition: 7}, Ranges: []coverage.Range{{Start: 300, End: 310}}},
			{Destination: coverage.Destination{Sink: "lake", Topic: "orders", Partition: 7}, Ranges: []coverage.Range{{Start: 300, End: 310}}}}}
	}
	for _, layout := range []Layout{LayoutSinkObjects, LayoutDeltas} {
		s, err := Open(ctx, Options{Blobs: counting, Prefix: "layout-" + string(layout) + "/", Layout: layout})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, big); err != nil {
			t.Fatal(err)
		}
		if layout == LayoutDeltas {
			if _, err := s.Fold(ctx); err != nil {
				t.Fatal(err)
			}
		}
		counting.take()
		// A fresh process: no cached object to write from.
		s, _ = Open(ctx, Options{Blobs: counting, Prefix: "layout-" + string(layout) + "/", Layout: layout})
		if err := s.Append(ctx, small("small")); err != nil {
			t.Fatal(err)
		}
		total := 0
		puts := counting.take()
		for _, n := range puts {
			total += n
		}
		t.Logf("%s: a checkpoint of 2 destinations over 10,000 wrote %d bytes in %d objects", layout, total, len(puts))
		switch {
		case layout == LayoutDeltas && (len(puts) != 1 || total > 256):
			t.Fatalf("deltas: %d objects, %d bytes; want one object under 256 bytes", len(puts), total)
		case layout == LayoutSinkObjects && total < 10_000:
			t.Fatalf("sinks: %d bytes: the baseline should rewrite both sinks' objects", total)
		}
	}
}
