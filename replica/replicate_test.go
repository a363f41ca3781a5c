package replica_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/replica"
)

// TestReplicateMirrorsNeverLeads: a primary (here the coverage table of
// one catalog, a durable.Tier like any other) takes random checkpoints
// while Replicate copies it into another table; after every run the
// mirror holds at most what the primary holds, and once the appends stop,
// exactly that.
func TestReplicateMirrorsNeverLeads(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	primary, table := tabletest.EmbeddedTable(t), tabletest.EmbeddedTable(t)
	var checkpoints []durable.Checkpoint
	for i := range 12 {
		c := durable.Checkpoint{Name: fmt.Sprintf("ck-%d", i), Writer: "pod-a"}
		for range 1 + rng.IntN(3) {
			d := coverage.Destination{Sink: []string{"raw", "lake", "a/b"}[rng.IntN(3)], Topic: "orders", Partition: int32(rng.IntN(2))}
			start := uint64(rng.IntN(500))
			c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1 + uint64(rng.IntN(9))}}})
		}
		checkpoints = append(checkpoints, c)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for _, c := range checkpoints {
			if err := primary.Append(ctx, c); err != nil {
				t.Error(err)
				return
			}
		}
	})
	opts := replica.Options{Writer: "mirror-job"}
	for range 4 {
		if _, err := replica.Replicate(ctx, primary, table, opts); err != nil {
			t.Fatal(err)
		}
		checkSubset(t, "during the appends", table, primary)
	}
	wg.Wait()
	res, err := replica.Replicate(ctx, primary, table, opts)
	if err != nil {
		t.Fatal(err)
	}
	checkSubset(t, "after the appends", table, primary)
	checkSubset(t, "after the appends (the other way)", primary, table)
	again, err := replica.Replicate(ctx, primary, table, opts)
	if err != nil || again.Replaced != 0 || again.Unchanged != res.Sinks {
		t.Fatalf("a second run with nothing new: %+v, %v; want every sink unchanged", again, err)
	}
}

// checkSubset fails unless every batch a covers is covered in b.
func checkSubset(t *testing.T, what string, a, b durable.Tier) {
	t.Helper()
	got, err := a.Coverage(context.Background(), durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := b.Coverage(context.Background(), durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for d, set := range got {
		for r := range set.All() {
			if w := want[d]; w == nil || !w.ContainsRange(r) {
				t.Fatalf("%s: %s covers %s in %s, not in %s", what, d, r, a.Name(), b.Name())
			}
		}
	}
}

// TestReplicateEveryRefusesANonPositiveInterval: a ticker of zero would
// panic; the schedule refuses it before touching either store.
func TestReplicateEveryRefusesANonPositiveInterval(t *testing.T) {
	for _, every := range []time.Duration{0, -time.Minute} {
		if err := replica.ReplicateEvery(context.Background(), nil, nil, every, replica.Options{Writer: "w"}); err == nil {
			t.Fatalf("interval %s accepted", every)
		}
	}
}
