package postgres

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// TestOpenAddsIndexesWhileWritersWrite: writers already running (as the
// pods of the previous release would be) append without pause while a
// new process opens the schema and has to build the missing indexes. An
// Append takes the checkpoints table first (its name) and the coverage
// table second; Open builds the coverage index first and the checkpoints
// one second, each holding a SHARE lock to its commit: the two orders
// cross, and PostgreSQL's deadlock detector may pick Open as its victim.
// Every Open must succeed, and every acknowledged append must be read.
func TestOpenAddsIndexesWhileWritersWrite(t *testing.T) {
	seed := testseed.Seed(t)
	schema := freshSchema(t)
	const writers, opens = 16, 6
	tiers := make([]*Tier, writers)
	for i := range tiers {
		tiers[i] = openTier(t, schema)
	}
	var (
		mu    sync.Mutex
		acked = map[coverage.Destination]*coverage.RangeSet{}
		stop  atomic.Bool
		wg    sync.WaitGroup
		werrs atomic.Int64
	)
	for w := range writers {
		rng := rand.New(rand.NewPCG(seed, uint64(w)))
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				d := coverage.Destination{Sink: "lake", Topic: fmt.Sprintf("t%d", rng.IntN(4)), Partition: int32(rng.IntN(8))}
				start := uint64(rng.IntN(100_000))
				r := coverage.Range{Start: start, End: start + 1 + uint64(rng.IntN(10))}
				c := durable.Checkpoint{Writer: fmt.Sprintf("pod-%d", w), Name: fmt.Sprintf("ck-%d", i),
					Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{r}}}}
				if err := tiers[w].Append(ctx, c); err != nil {
					werrs.Add(1)
					t.Logf("writer %d: %v", w, err)
					continue
				}
				mu.Lock()
				if acked[d] == nil {
					acked[d] = new(coverage.RangeSet)
				}
				_ = acked[d].Add(r)
				mu.Unlock()
			}
		})
	}
	var failed []error
	for range opens {
		for _, ix := range indexes {
			exec(t, "DROP INDEX IF EXISTS "+pgx.Identifier{schema, ix.name}.Sanitize())
		}
		tier, err := Open(ctx, Options{URL: tiers[0].pool.Config().ConnString(), Schema: schema})
		if err != nil {
			failed = append(failed, err)
			continue
		}
		tier.Close()
	}
	stop.Store(true)
	wg.Wait()
	var retries int64
	for _, tier := range tiers {
		retries += tier.Retries()
	}
	t.Logf("writers' transactions retried (deadlock or serialization victims): %d", retries)
	reader := openTier(t, schema)
	got, err := reader.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for d, want := range acked {
		for r := range want.All() {
			if g := got[d]; g == nil || !g.ContainsRange(r) {
				t.Fatalf("seed %d: %s %v acknowledged, not read", seed, d, r)
			}
		}
	}
	if werrs.Load() > 0 {
		t.Errorf("seed %d: %d appends failed while Open built the indexes", seed, werrs.Load())
	}
	if len(failed) > 0 {
		t.Fatalf("seed %d: %d of %d Opens on a schema being written failed; the first: %v", seed, len(failed), opens, failed[0])
	}
}
