package fleetsim

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/durable/durabletest"
	"github.com/covmirror/covmirror/object"
)

// The in-memory tier, the simulated table over it and the object tier over
// the simulated bucket each pass the conformance suite every durable tier
// runs. The suite runs subtests, which a synctest bubble refuses, so it
// runs in real time: the table and the bucket with latencies of a
// millisecond or none.
func TestConformance(t *testing.T) {
	t.Run("Memory", func(t *testing.T) {
		durabletest.Run(t, durabletest.Harness{New: func(*testing.T) func(*testing.T) durable.Tier {
			m := NewMemTier()
			return func(*testing.T) durable.Tier { return m }
		}})
	})
	t.Run("Catalog", func(t *testing.T) {
		durabletest.Run(t, durabletest.Harness{Light: true, New: func(t *testing.T) func(*testing.T) durable.Tier {
			c, err := NewCatalog(CatalogOptions{Inner: NewMemTier(), MinCommit: 0, MaxCommit: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			return func(*testing.T) durable.Tier { return c }
		}})
	})
	t.Run("ObjectOnS3", func(t *testing.T) {
		durabletest.Run(t, durabletest.Harness{New: func(t *testing.T) func(*testing.T) durable.Tier {
			s := newS3(t, S3Options{NoLatency: true})
			return func(t *testing.T) durable.Tier {
				tier, err := object.Open(context.Background(), object.Options{Blobs: s})
				if err != nil {
					t.Fatal(err)
				}
				return tier
			}
		}})
	})
}

// Writers that start together on one table all land, one commit at a
// time: every commit but the first of a batch of overlapping ones loses
// and retries, so the table's commits per second stay near 1/latency
// whatever the writers.
func TestCatalogSerializesCommits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		mem := NewMemTier()
		c, err := NewCatalog(CatalogOptions{Inner: mem, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		const writers = 20
		began := time.Now()
		var wg sync.WaitGroup
		errs := make([]error, writers)
		for w := range writers {
			wg.Go(func() {
				d := coverage.Destination{Sink: "raw", Topic: "t", Partition: int32(w)}
				errs[w] = c.Append(ctx, durable.Checkpoint{Name: "c", Writer: d.String(),
					Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 1, End: 2}}}}})
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		took := time.Since(began)
		if c.Commits() != writers || c.CommitConflicts() < writers-1 {
			t.Fatalf("%d commits, %d conflicts: want %d commits and at least %d conflicts", c.Commits(), c.CommitConflicts(), writers, writers-1)
		}
		// Serialized, 20 commits of at least 100 ms take at least 2 s.
		if took < writers*100*time.Millisecond {
			t.Fatalf("%d overlapping commits landed in %v: faster than one at a time", writers, took)
		}
		got, err := c.Coverage(ctx, durable.Filter{})
		if err != nil || len(got) != writers {
			t.Fatalf("coverage of %d destinations (%v), want %d", len(got), err, writers)
		}
	})
}
