package postgres

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// TestRecordInTx: a relational sink's rows and their coverage commit or
// roll back together.
func TestRecordInTx(t *testing.T) {
	schema := freshSchema(t)
	tier := openTier(t, schema)
	sink := pgx.Identifier{schema, "sink_rows"}.Sanitize()
	exec(t, "CREATE TABLE "+sink+" (batch int8 PRIMARY KEY)")
	d := coverage.Destination{Sink: "warehouse", Topic: "orders", Partition: 3}
	pool := adminPool(t)

	// write inserts batches [lo,hi) as sink rows and records them in one
	// transaction, then commits or rolls back.
	write := func(lo, hi int64, commit bool, record func(pgx.Tx, []coverage.DestinationRanges) error) error {
		tx, err := pool.Begin(ctx)
		if err != nil {
			return err
		}
		defer func() { _ = tx.Rollback(ctx) }()
		if _, err := tx.Exec(ctx, "INSERT INTO "+sink+" SELECT generate_series($1::int8, $2::int8 - 1)", lo, hi); err != nil {
			return err
		}
		if err := record(tx, []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: uint64(lo), End: uint64(hi)}}}}); err != nil {
			return err
		}
		if !commit {
			return tx.Rollback(ctx)
		}
		return tx.Commit(ctx)
	}
	byFunc := func(tx pgx.Tx, r []coverage.DestinationRanges) error { return RecordInTx(ctx, tx, schema, "pod-a", r) }
	byMethod := func(tx pgx.Tx, r []coverage.DestinationRanges) error { return tier.RecordInTx(ctx, tx, "pod-b", r) }

	// check compares the coverage with the sink's rows and with want.
	check := func(what string, want ...coverage.Range) {
		t.Helper()
		got, err := tier.Coverage(ctx, durable.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		wantSet, _ := coverage.NewRangeSet(want...)
		if g := got[d]; (g == nil && len(want) > 0) || (g != nil && !g.Equal(&wantSet)) || len(got) > 1 {
			t.Fatalf("%s: coverage %v, want %s on %s only", what, got, wantSet.String(), d)
		}
		rows, _ := pool.Query(ctx, "SELECT batch FROM "+sink+" ORDER BY batch")
		batches, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			t.Fatal(err)
		}
		var fromRows coverage.RangeSet
		for _, b := range batches {
			_ = fromRows.Add(coverage.Range{Start: uint64(b), End: uint64(b) + 1})
		}
		if !fromRows.Equal(&wantSet) {
			t.Fatalf("%s: the sink holds %s, its coverage says %s", what, fromRows.String(), wantSet.String())
		}
	}

	if err := write(0, 10, false, byFunc); err != nil {
		t.Fatal(err)
	}
	check("after a rollback")
	if err := write(10, 20, true, byFunc); err != nil {
		t.Fatal(err)
	}
	check("after a commit", coverage.Range{Start: 10, End: 20})
	// The sink write fails after the coverage was recorded: the whole
	// transaction goes, coverage with it.
	if err := write(15, 30, true, byMethod); err == nil {
		t.Fatal("a duplicate sink row committed")
	}
	check("after a failed sink write", coverage.Range{Start: 10, End: 20})
	if err := write(30, 40, true, byMethod); err != nil {
		t.Fatal(err)
	}
	check("after a second commit", coverage.Range{Start: 10, End: 20}, coverage.Range{Start: 30, End: 40})

	// Bad input fails before anything is written, and so does a schema
	// that is not a plain identifier.
	bad := []struct {
		name   string
		schema string
		writer string
		r      coverage.Range
		want   error
	}{
		{"overflow", schema, "w", coverage.Range{Start: 1, End: coverage.MaxBatchEnd + 1}, coverage.ErrInvalidRange},
		{"no writer", schema, "", coverage.Range{Start: 1, End: 2}, durable.ErrInvalidCheckpoint},
		{"hostile schema", schema + `"; DROP TABLE x; --`, "w", coverage.Range{Start: 1, End: 2}, nil},
	}
	for _, b := range bad {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = RecordInTx(ctx, tx, b.schema, b.writer, []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{b.r}}})
		if err == nil || (b.want != nil && !errors.Is(err, b.want)) {
			t.Errorf("%s: %v, want %v", b.name, err, b.want)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check("after bad input", coverage.Range{Start: 10, End: 20}, coverage.Range{Start: 30, End: 40})
}

// TestRecordInTxConcurrent: sink transactions of several writers on the
// same destinations, under READ COMMITTED, all keep their ranges, and
// Append in between changes nothing of that.
func TestRecordInTxConcurrent(t *testing.T) {
	schema := freshSchema(t)
	tier := openTier(t, schema)
	dests := []coverage.Destination{{Sink: "wh", Topic: "a"}, {Sink: "wh", Topic: "b"}}
	m := model{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 25 {
				// Writers take the destinations in opposite orders; the
				// merge sorts them, so row locks are taken in one order.
				r := []coverage.DestinationRanges{
					{Destination: dests[w%2], Ranges: []coverage.Range{{Start: uint64(w*1000 + i), End: uint64(w*1000 + i + 2)}}},
					{Destination: dests[1-w%2], Ranges: []coverage.Range{{Start: uint64(i * 3), End: uint64(i*3 + 1)}}},
				}
				var err error
				if i%5 == 0 {
					err = tier.Append(ctx, durable.Checkpoint{Writer: fmt.Sprintf("pod-%d", w), Name: fmt.Sprint(i), Ranges: r})
				} else {
					err = pgx.BeginFunc(ctx, tier.pool, func(tx pgx.Tx) error { return tier.RecordInTx(ctx, tx, fmt.Sprintf("pod-%d", w), r) })
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				m.add(r)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if !t.Failed() {
		m.check(t, "after concurrent transactions", tier)
	}
}
