package replica_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/replica"
)

// TestReplicateRacesAppendsAndCompaction: sink objects take checkpoints
// while two Replicate jobs copy them into one table and a compaction
// rewrites that table's files, all at once. The table never covers what
// the primary does not (the table is read before the primary, which only
// grows), and once everything stops one more run makes them equal.
func TestReplicateRacesAppendsAndCompaction(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	blobs, err := object.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	primary, err := object.Open(ctx, object.Options{Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	table := tabletest.EmbeddedTable(t)
	var checkpoints []durable.Checkpoint
	for i := range 20 {
		c := durable.Checkpoint{Name: fmt.Sprintf("ck-%d", i), Writer: "pod-a"}
		for range 1 + rng.IntN(3) {
			d := coverage.Destination{Sink: []string{"raw", "lake", "a/b"}[rng.IntN(3)], Topic: "orders", Partition: int32(rng.IntN(2))}
			start := uint64(rng.IntN(500))
			c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1 + uint64(rng.IntN(9))}}})
		}
		checkpoints = append(checkpoints, c)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		defer close(stop)
		for _, c := range checkpoints {
			if err := primary.Append(ctx, c); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Millisecond)
		}
	})
	var raced, compacted sync.Map
	for job := range 2 {
		wg.Go(func() {
			opts := replica.Options{Writer: fmt.Sprintf("mirror-%d", job)}
			for run := 0; ; run++ {
				res, err := replica.Replicate(ctx, primary, table, opts)
				if err != nil {
					t.Errorf("replicate job %d run %d: %v", job, run, err)
					return
				}
				raced.Store(fmt.Sprint(job, run), res.Raced)
				if msg := subsetMsg(ctx, table, primary); msg != "" {
					t.Errorf("job %d run %d: %s", job, run, msg)
					return
				}
				select {
				case <-stop:
					return
				default:
				}
			}
		})
	}
	wg.Go(func() {
		for run := 0; ; run++ {
			res, err := compaction.Compact(ctx, table, compaction.Options{})
			if err != nil {
				t.Errorf("compaction run %d: %v", run, err)
				return
			}
			compacted.Store(run, res.Sinks)
			select {
			case <-stop:
				return
			default:
			}
		}
	})
	wg.Wait()
	if t.Failed() {
		return
	}
	if _, err := replica.Replicate(ctx, primary, table, replica.Options{Writer: "final"}); err != nil {
		t.Fatal(err)
	}
	if msg := subsetMsg(ctx, table, primary) + subsetMsg(ctx, primary, table); msg != "" {
		t.Fatalf("after the last run: %s", msg)
	}
	var nRaced, nCompacted int
	raced.Range(func(_, v any) bool { nRaced += v.(int); return true })
	compacted.Range(func(_, v any) bool { nCompacted += v.(int); return true })
	t.Logf("replicate runs lost %d sinks to a concurrent rewrite; compaction rewrote %d sinks", nRaced, nCompacted)
}

// subsetMsg says where a covers a batch b does not, reading a first.
func subsetMsg(ctx context.Context, a, b durable.Tier) string {
	got, err := a.Coverage(ctx, durable.Filter{})
	if err != nil {
		return err.Error()
	}
	want, err := b.Coverage(ctx, durable.Filter{})
	if err != nil {
		return err.Error()
	}
	for d, set := range got {
		for r := range set.All() {
			if w := want[d]; w == nil || !w.ContainsRange(r) {
				return fmt.Sprintf("%s covers %s in %s, not in %s", d, r, a.Name(), b.Name())
			}
		}
	}
	return ""
}
