package postgres

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// TestFoldsKeepTheUnion: four Tiers append random checkpoints to shared
// destinations at once, folding after every append, while a fifth folds
// in a loop. Whatever the interleaving, the coverage is exactly the union
// of every range appended (the model), after every round and at the end;
// a final fold leaves one row per destination, whose last writer is the
// last to write it.
func TestFoldsKeepTheUnion(t *testing.T) {
	seed := testseed.Seed(t)
	schema := freshSchema(t)
	open := func(foldEvery int) *Tier {
		tier, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema, FoldEvery: foldEvery})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tier.Close)
		return tier
	}
	const writers, rounds, perRound = 4, 5, 10
	tiers := make([]*Tier, writers)
	for w := range tiers {
		tiers[w] = open(1)
	}
	folder := open(-1)
	dests := []coverage.Destination{{Sink: "raw", Topic: "t"}, {Sink: "raw", Topic: "t", Partition: 1}, {Sink: "lake", Topic: "t"}}
	want := map[coverage.Destination]*coverage.RangeSet{}
	for _, d := range dests {
		want[d] = new(coverage.RangeSet)
	}
	for round := range rounds {
		checkpoints := make([][]durable.Checkpoint, writers)
		for w := range writers {
			r := rand.New(rand.NewPCG(seed, uint64(round*writers+w)))
			for i := range perRound {
				c := durable.Checkpoint{Writer: fmt.Sprintf("w%d", w), Name: fmt.Sprintf("%d/%d", round, i)}
				for _, d := range dests {
					if r.IntN(3) == 0 {
						continue
					}
					start := r.Uint64N(2000)
					rg := coverage.Range{Start: start, End: start + 1 + r.Uint64N(20)}
					c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{rg}})
					_ = want[d].Add(rg)
				}
				checkpoints[w] = append(checkpoints[w], c)
			}
		}
		var wg sync.WaitGroup
		stop := make(chan struct{})
		folderDone := make(chan error, 1)
		go func() {
			for {
				select {
				case <-stop:
					folderDone <- nil
					return
				default:
				}
				if _, err := folder.Fold(ctx, durable.Filter{}); err != nil {
					folderDone <- err
					return
				}
			}
		}()
		for w := range writers {
			wg.Go(func() {
				for _, c := range checkpoints[w] {
					if err := tiers[w].Append(ctx, c); err != nil {
						t.Errorf("writer %d: %v", w, err)
						return
					}
				}
			})
		}
		wg.Wait()
		close(stop)
		if err := <-folderDone; err != nil {
			t.Fatalf("round %d: fold: %v", round, err)
		}
		requireCoverage(t, folder, want, fmt.Sprintf("round %d", round))
	}
	if _, err := folder.Fold(ctx, durable.Filter{}); err != nil {
		t.Fatal(err)
	}
	requireCoverage(t, folder, want, "after the last fold")
	var rows int
	if err := adminPool(t).QueryRow(ctx, "SELECT count(*) FROM "+folder.coverage).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != len(dests) {
		t.Fatalf("%d rows after the last fold, want one per destination (%d)", rows, len(dests))
	}
	t.Logf("%d writers x %d rounds x %d checkpoints with a fold after each, and a folder looping: %d transactions run again",
		writers, rounds, perRound, folder.Retries()+tiers[0].Retries()+tiers[1].Retries()+tiers[2].Retries()+tiers[3].Retries())
}

// requireCoverage fails t unless tier covers exactly want.
func requireCoverage(t *testing.T, tier *Tier, want map[coverage.Destination]*coverage.RangeSet, when string) {
	t.Helper()
	got, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	for d, set := range want {
		if set.IsEmpty() {
			continue
		}
		if got[d] == nil || !got[d].Equal(set) {
			t.Fatalf("%s: %s holds %v, want the union %v", when, d, got[d], set)
		}
	}
}

// TestFoldKeepsTheLastWriter: a fold's one row names the writer of the
// latest of the rows it merged, as LastWrites did before it.
func TestFoldKeepsTheLastWriter(t *testing.T) {
	schema := freshSchema(t)
	clock := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tier, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema, FoldEvery: -1, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	defer tier.Close()
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	for i, w := range []string{"pod-b", "pod-a", "pod-c"} {
		clock = clock.Add(time.Minute)
		c := durable.Checkpoint{Writer: w, Name: fmt.Sprint(i), Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: uint64(i * 10), End: uint64(i*10 + 5)}}}}}
		if err := tier.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	before, err := tier.LastWrites(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := tier.Fold(ctx, durable.Filter{}); err != nil || n != 1 {
		t.Fatalf("fold: %d destinations, %v", n, err)
	}
	after, err := tier.LastWrites(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if before[d].Writer != "pod-c" || after[d].Writer != "pod-c" || !after[d].At.Equal(before[d].At) {
		t.Fatalf("last write before the fold %+v, after %+v; want pod-c's", before[d], after[d])
	}
}

// TestEmptyCheckpointLands: a checkpoint without ranges commits its name
// (a pod may checkpoint nothing but still be asked whether it landed).
func TestEmptyCheckpointLands(t *testing.T) {
	tier := openTier(t, freshSchema(t))
	if err := tier.Append(ctx, durable.Checkpoint{Writer: "w", Name: "empty"}); err != nil {
		t.Fatalf("append without ranges: %v", err)
	}
	if landed, err := tier.Landed(ctx, "w", "empty"); !landed || err != nil {
		t.Fatalf("landed: %v, %v", landed, err)
	}
}

// TestRecordInTxFolds: a destination written only through RecordInTx, in
// the callers' own transactions, is folded there once it has more than
// FoldRowsInTx rows, and keeps exactly its union.
func TestRecordInTxFolds(t *testing.T) {
	schema := freshSchema(t)
	tier := openTier(t, schema)
	d := coverage.Destination{Sink: "warehouse", Topic: "orders"}
	want := new(coverage.RangeSet)
	for i := range 3 * FoldRowsInTx {
		rg := coverage.Range{Start: uint64(i * 2), End: uint64(i*2 + 1)} // a gap after each
		tx, err := adminPool(t).Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := RecordInTx(ctx, tx, schema, "loader", []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{rg}}}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		_ = want.Add(rg)
		var rows int
		if err := adminPool(t).QueryRow(ctx, "SELECT count(*) FROM "+tier.coverage).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows > FoldRowsInTx+1 {
			t.Fatalf("after %d records, %d rows: RecordInTx does not fold", i+1, rows)
		}
	}
	requireCoverage(t, tier, map[coverage.Destination]*coverage.RangeSet{d: want}, "after the records")
}
