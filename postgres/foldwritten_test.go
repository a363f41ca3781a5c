package postgres

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// destRows returns each destination's rows as their ctids, to tell a row
// left alone from one rewritten.
func destRows(t *testing.T, schema string) map[coverage.Destination][]string {
	t.Helper()
	rows, err := adminPool(t).Query(ctx, "SELECT sink, topic, partition, ctid::text FROM "+pgx.Identifier{schema, "coverage"}.Sanitize()+" ORDER BY ctid")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[coverage.Destination][]string{}
	for rows.Next() {
		var d coverage.Destination
		var id string
		if err := rows.Scan(&d.Sink, &d.Topic, &d.Partition, &id); err != nil {
			t.Fatal(err)
		}
		out[d] = append(out[d], id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAppendFoldsWhatItWrote: with FoldEvery 2 and FoldRows 1, the second
// Append folds the destinations both Appends wrote (those past one row),
// and no other: a destination with as many rows that neither wrote keeps
// its rows as they were, and the coverage is the union throughout.
func TestAppendFoldsWhatItWrote(t *testing.T) {
	schema := freshSchema(t)
	loader := advTier(t, schema) // never folds
	tier, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema, FoldEvery: 2, FoldRows: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tier.Close()
	a, b, z := coverage.Destination{Sink: "lake", Topic: "t", Partition: 1}, coverage.Destination{Sink: "lake", Topic: "t", Partition: 2}, coverage.Destination{Sink: "lake", Topic: "t", Partition: 3}
	want := map[coverage.Destination]*coverage.RangeSet{a: {}, b: {}, z: {}}
	for _, d := range []coverage.Destination{a, b, z} {
		appendRanges(t, loader, d, 0, 2, want[d])
	}
	before := destRows(t, schema)
	add := func(name string, d coverage.Destination, lo uint64) {
		t.Helper()
		if err := tier.Append(ctx, durable.Checkpoint{Writer: "pod", Name: name, Ranges: oneRange(d, lo, lo+1)}); err != nil {
			t.Fatal(err)
		}
		_ = want[d].Add(coverage.Range{Start: lo, End: lo + 1})
	}
	add("1", a, 100)
	if got := destRows(t, schema); len(got[a]) != 3 || len(got[b]) != 2 {
		t.Fatalf("after the first Append (no fold yet): a has %d rows, b %d; want 3 and 2", len(got[a]), len(got[b]))
	}
	add("2", b, 200)
	after := destRows(t, schema)
	if len(after[a]) != 1 || len(after[b]) != 1 {
		t.Fatalf("after the second Append: a has %d rows, b %d; want both folded into one", len(after[a]), len(after[b]))
	}
	if fmt.Sprint(after[z]) != fmt.Sprint(before[z]) {
		t.Fatalf("z, which no Append wrote, was touched: rows %v, before %v", after[z], before[z])
	}
	requireCoverage(t, tier, want, "after the fold of what was written")

	// FoldRows is a threshold: with 4, a destination of 3 rows stays.
	t4, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema, FoldEvery: 1, FoldRows: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer t4.Close()
	for i := range 4 {
		lo := uint64(300 + 2*i)
		if err := t4.Append(ctx, durable.Checkpoint{Writer: "pod4", Name: fmt.Sprint(i), Ranges: oneRange(a, lo, lo+1)}); err != nil {
			t.Fatal(err)
		}
		_ = want[a].Add(coverage.Range{Start: lo, End: lo + 1})
		n := len(destRows(t, schema)[a])
		if wantRows := []int{2, 3, 4, 1}[i]; n != wantRows {
			t.Fatalf("FoldRows 4, after append %d: a has %d rows, want %d", i, n, wantRows)
		}
	}
	requireCoverage(t, tier, want, "after the threshold folds")
}

// TestManyWritersFoldsUnion: 32 Tiers on one pool, each its own writer,
// append random checkpoints to 24 shared destinations at once, each Tier
// folding what it wrote (random FoldEvery and FoldRows, 1 to 3), while an
// operator's Fold of the whole table loops beside them. The coverage is
// then exactly the union of every range appended (the model), every name
// landed, and a last Fold leaves one row per destination.
func TestManyWritersFoldsUnion(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	schema := freshSchema(t)
	cfg, err := pgxpool.ParseConfig(catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 12
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var dests []coverage.Destination
	for _, sink := range []string{"raw", "lake", "search"} {
		for _, topic := range []string{"orders", "users"} {
			for p := range int32(4) {
				dests = append(dests, coverage.Destination{Sink: sink, Topic: topic, Partition: p})
			}
		}
	}
	const writers, per = 32, 25
	m := model{}
	plans := make([][]durable.Checkpoint, writers)
	tiers := make([]*Tier, writers)
	for w := range writers {
		tier, err := Open(ctx, Options{Pool: pool, Schema: schema, FoldEvery: 1 + rng.IntN(3), FoldRows: 1 + rng.IntN(3), MinBackoff: time.Millisecond, MaxBackoff: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		tiers[w] = tier
		for i := range per {
			c := durable.Checkpoint{Writer: fmt.Sprintf("pod-%d", w), Name: fmt.Sprintf("ck-%d", i)}
			for _, j := range rng.Perm(len(dests))[:1+rng.IntN(8)] {
				var rs []coverage.Range
				for range 1 + rng.IntN(2) {
					s := uint64(rng.IntN(5000))
					rs = append(rs, coverage.Range{Start: s, End: s + 1 + uint64(rng.IntN(40))})
				}
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: dests[j], Ranges: rs})
			}
			plans[w] = append(plans[w], c)
			m.add(c.Ranges)
		}
	}
	operator := tiers[0]
	stop := make(chan struct{})
	folds := make(chan error, 1)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				t.Logf("the operator's whole-table Fold ran %d times beside the writers", n)
				folds <- nil
				return
			default:
			}
			if _, err := operator.Fold(ctx, durable.Filter{}); err != nil {
				folds <- err
				return
			}
			n++
		}
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for _, c := range plans[w] {
				if err := tiers[w].Append(ctx, c); err != nil {
					t.Errorf("writer %d, %s: %v", w, c.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-folds; err != nil {
		t.Fatalf("seed %d: the operator's fold: %v", seed, err)
	}
	if t.Failed() {
		t.Fatalf("seed %d: an append failed", seed)
	}
	m.check(t, fmt.Sprintf("seed %d: after %d writers' appends with folds", seed, writers), tiers[1])
	var retries int64
	for w, tier := range tiers {
		retries += tier.Retries()
		for _, c := range plans[w] {
			if ok, err := tier.Landed(ctx, c.Writer, c.Name); !ok || err != nil {
				t.Fatalf("seed %d: %s of %s landed: %v, %v", seed, c.Name, c.Writer, ok, err)
			}
		}
	}
	t.Logf("seed %d: %d transactions run again", seed, retries)
	if _, err := operator.Fold(ctx, durable.Filter{}); err != nil {
		t.Fatal(err)
	}
	m.check(t, fmt.Sprintf("seed %d: after the last fold", seed), tiers[1])
	if n := rowCount(t, schema); n != len(m) {
		t.Fatalf("seed %d: %d rows after the last fold, want one per destination (%d)", seed, n, len(m))
	}
}
