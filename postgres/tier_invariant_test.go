package postgres

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// Attacks on the tier's invariant: a fold must never drop an appended
// range whatever runs beside it, a name stays bound to its payload, and
// bad input or a foreign table is refused before anything is written.

// advTier opens a tier that never folds from Append, so the tests decide
// when rows are folded.
func advTier(t *testing.T, schema string) *Tier {
	t.Helper()
	adminPool(t)
	tier, err := Open(ctx, Options{Pool: adminPool(t), Schema: schema, FoldEvery: -1})
	if err != nil {
		t.Fatal(err)
	}
	return tier
}

func oneRange(d coverage.Destination, lo, hi uint64) []coverage.DestinationRanges {
	return []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: lo, End: hi}}}}
}

// appendRanges appends one checkpoint per range [i*2, i*2+1) for i in
// [from,to) to d, and adds them to want.
func appendRanges(t *testing.T, tier *Tier, d coverage.Destination, from, to int, want *coverage.RangeSet) {
	t.Helper()
	for i := from; i < to; i++ {
		r := coverage.Range{Start: uint64(2 * i), End: uint64(2*i + 1)}
		if err := tier.Append(ctx, durable.Checkpoint{Writer: "w", Name: fmt.Sprintf("%s-%d", d, i), Ranges: oneRange(d, r.Start, r.End)}); err != nil {
			t.Fatal(err)
		}
		_ = want.Add(r)
	}
}

func rowCount(t *testing.T, schema string) int {
	t.Helper()
	var n int
	if err := adminPool(t).QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "coverage"}.Sanitize()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// A Tier.Fold runs while a RecordInTx transaction holding an uncommitted
// row (and, past FoldRowsInTx, its own fold's row locks) is open; the
// transaction then commits, or rolls back. The union holds exactly what
// committed.
func TestFoldBesideOpenRecordInTx(t *testing.T) {
	for _, commit := range []bool{true, false} {
		for _, inTxFold := range []bool{false, true} {
			t.Run(fmt.Sprintf("commit=%v/inTxFold=%v", commit, inTxFold), func(t *testing.T) {
				schema := freshSchema(t)
				tier := advTier(t, schema)
				d := coverage.Destination{Sink: "s", Topic: "t", Partition: 0}
				var want coverage.RangeSet
				n := 5
				if inTxFold {
					n = FoldRowsInTx + 2
				}
				appendRanges(t, tier, d, 0, n, &want)

				tx, err := adminPool(t).Begin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer func() { _ = tx.Rollback(ctx) }()
				if err := tier.RecordInTx(ctx, tx, "sinkwriter", oneRange(d, 1000, 1001)); err != nil {
					t.Fatal(err)
				}
				folded := make(chan error, 1)
				go func() { _, err := tier.Fold(ctx, durable.Filter{}); folded <- err }()
				select {
				case err := <-folded: // no lock in its way
					if err != nil {
						t.Fatal(err)
					}
					folded <- nil
				case <-time.After(300 * time.Millisecond): // waiting on the transaction's locks
				}
				// Appends meanwhile, as other writers would.
				appendRanges(t, tier, d, n, n+3, &want)
				if commit {
					if err := tx.Commit(ctx); err != nil {
						t.Fatal(err)
					}
					_ = want.Add(coverage.Range{Start: 1000, End: 1001})
				} else if err := tx.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
				if err := <-folded; err != nil {
					t.Fatal(err)
				}
				requireCoverage(t, tier, map[coverage.Destination]*coverage.RangeSet{d: &want}, "after the fold and the transaction")
				if _, err := tier.Fold(ctx, durable.Filter{}); err != nil {
					t.Fatal(err)
				}
				requireCoverage(t, tier, map[coverage.Destination]*coverage.RangeSet{d: &want}, "after folding again")
				if got := rowCount(t, schema); got != 1 {
					t.Fatalf("%d rows after the last fold, want 1", got)
				}
			})
		}
	}
}

// A caller's REPEATABLE READ or SERIALIZABLE transaction took its snapshot
// before a Tier.Fold committed; its RecordInTx then folds rows the
// snapshot still sees. It must fail as a serialization failure (to be
// retried whole), never merge deleted rows into a second copy or lose the
// fold's row.
func TestInTxFoldAfterConcurrentFold(t *testing.T) {
	for _, iso := range []pgx.TxIsoLevel{pgx.RepeatableRead, pgx.Serializable} {
		t.Run(string(iso), func(t *testing.T) {
			schema := freshSchema(t)
			tier := advTier(t, schema)
			d := coverage.Destination{Sink: "s", Topic: "t", Partition: 0}
			var want coverage.RangeSet
			appendRanges(t, tier, d, 0, FoldRowsInTx+1, &want)

			tx, err := adminPool(t).BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = tx.Rollback(ctx) }()
			if _, err := tx.Exec(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "coverage"}.Sanitize()); err != nil {
				t.Fatal(err)
			}
			if n, err := tier.Fold(ctx, durable.Filter{}); err != nil || n != 1 {
				t.Fatalf("fold: %d, %v", n, err)
			}
			err = tier.RecordInTx(ctx, tx, "sinkwriter", oneRange(d, 1000, 1001))
			if err == nil {
				err = tx.Commit(ctx)
			}
			if err != nil && sqlState(err) != "40001" {
				t.Fatalf("record in a %s transaction after a fold: %v, want nil or a serialization failure", iso, err)
			}
			if err == nil {
				_ = want.Add(coverage.Range{Start: 1000, End: 1001})
			}
			_ = tx.Rollback(ctx)
			requireCoverage(t, tier, map[coverage.Destination]*coverage.RangeSet{d: &want}, "after the transaction")
			t.Logf("%s: %v", iso, err)
		})
	}
}

// Two READ COMMITTED transactions record into destinations a and b in
// opposite orders, each folding as it goes (FoldRowsInTx rows each): the
// folds pass over the rows the other holds (SKIP LOCKED), so neither
// waits for the other nor is a deadlock victim, and both commit.
func TestInTxFoldsOppositeOrders(t *testing.T) {
	schema := freshSchema(t)
	tier := advTier(t, schema)
	a := coverage.Destination{Sink: "s", Topic: "a", Partition: 0}
	b := coverage.Destination{Sink: "s", Topic: "b", Partition: 0}
	var wantA, wantB coverage.RangeSet
	appendRanges(t, tier, a, 0, FoldRowsInTx+1, &wantA)
	appendRanges(t, tier, b, 0, FoldRowsInTx+1, &wantB)

	pool := adminPool(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	start := make(chan struct{})
	step := make(chan struct{}, 2)
	for i, order := range [][]coverage.Destination{{a, b}, {b, a}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tx, err := pool.Begin(ctx)
			if err != nil {
				errs[i] = err
				return
			}
			defer func() { _ = tx.Rollback(ctx) }()
			<-start
			if err := tier.RecordInTx(ctx, tx, "w", oneRange(order[0], uint64(1000+i), uint64(1001+i))); err != nil {
				errs[i] = err
				return
			}
			step <- struct{}{}
			time.Sleep(200 * time.Millisecond) // both hold their first destination's locks
			if err := tier.RecordInTx(ctx, tx, "w", oneRange(order[1], uint64(1000+i), uint64(1001+i))); err != nil {
				errs[i] = err
				return
			}
			errs[i] = tx.Commit(ctx)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Logf("transaction %d: %v (SQLSTATE %s)", i, err, sqlState(err))
		} else {
			_ = wantA.Add(coverage.Range{Start: uint64(1000 + i), End: uint64(1001 + i)})
			_ = wantB.Add(coverage.Range{Start: uint64(1000 + i), End: uint64(1001 + i)})
		}
	}
	requireCoverage(t, tier, map[coverage.Destination]*coverage.RangeSet{a: &wantA, b: &wantB}, "after both")
	for i, err := range errs {
		if err != nil {
			t.Errorf("READ COMMITTED transaction %d folding in the opposite order to another: %v (SQLSTATE %s), want it to commit", i, err, sqlState(err))
		}
	}
}

// Two Tiers append the same name with different payloads at once, many
// times: exactly one lands, the other is ErrNameReused, and the coverage
// holds the winner's ranges only.
func TestSameNameRace(t *testing.T) {
	schema := freshSchema(t)
	t1, t2 := openTier(t, schema), openTier(t, schema)
	d := coverage.Destination{Sink: "s", Topic: "t", Partition: 0}
	var want coverage.RangeSet
	for i := range 40 {
		name := fmt.Sprintf("n%d", i)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for j, tier := range []*Tier{t1, t2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				lo := uint64(i*10 + j*5)
				errs[j] = tier.Append(ctx, durable.Checkpoint{Writer: "w", Name: name, Ranges: oneRange(d, lo, lo+1)})
			}()
		}
		wg.Wait()
		won := -1
		for j, err := range errs {
			switch {
			case err == nil:
				if won >= 0 {
					t.Fatalf("%s: both payloads landed", name)
				}
				won = j
			case !errors.Is(err, durable.ErrNameReused):
				t.Fatalf("%s: %v", name, err)
			}
		}
		if won < 0 {
			t.Fatalf("%s: neither landed: %v", name, errs)
		}
		lo := uint64(i*10 + won*5)
		_ = want.Add(coverage.Range{Start: lo, End: lo + 1})
		if ok, err := t2.Landed(ctx, "w", name); err != nil || !ok {
			t.Fatalf("%s: landed %v, %v", name, ok, err)
		}
	}
	got, err := t1.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got[d].Equal(&want) {
		t.Fatalf("coverage %v, want %s", got, want.String())
	}
}

// The canned queries give the same rows over unfolded rows (several per
// destination, overlapping, out of order) as after a fold.
func TestQueriesUnfolded(t *testing.T) {
	schema := freshSchema(t)
	tier := advTier(t, schema)
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "t", Partition: 0}
	wh := coverage.Destination{Sink: "wh", Topic: "t", Partition: 0}
	wh1 := coverage.Destination{Sink: "wh", Topic: "t", Partition: 1}
	raw1 := coverage.Destination{Sink: coverage.RawSink, Topic: "t", Partition: 1}
	ranges := []struct {
		d      coverage.Destination
		lo, hi uint64
	}{
		{raw, 50, 60}, {raw, 0, 10}, {raw, 10, 20}, {raw, 30, 40}, {raw, 35, 45},
		{wh, 40, 45}, {wh, 0, 5}, {wh, 5, 8}, {wh, 52, 60},
		{raw1, 100, 110}, {raw1, 120, 130}, {wh1, 120, 125},
	}
	for i, r := range ranges {
		if err := tier.Append(ctx, durable.Checkpoint{Writer: fmt.Sprintf("w%d", i%3), Name: fmt.Sprint(i), Ranges: oneRange(r.d, r.lo, r.hi)}); err != nil {
			t.Fatal(err)
		}
	}
	run := func() map[string]*QueryResult {
		out := map[string]*QueryResult{}
		for _, name := range QueryNames() {
			acked := []coverage.Extent{{Topic: "t", Partition: 0, End: 70}, {Topic: "t", Partition: 1, Start: 140, End: 150}, {Topic: "t", Partition: 2, Start: 5, End: 9}}
			for _, p := range []QueryParams{{}, {Sink: "wh"}, {Topic: "t", Partition: new(int32)}, {Extents: acked}} {
				res, err := tier.Query(ctx, name, p)
				if err != nil {
					t.Fatal(err)
				}
				out[fmt.Sprintf("%s %+v", name, p.Sink)+fmt.Sprint(p.Partition != nil, len(p.Extents))] = res
			}
		}
		return out
	}
	before := run()
	if _, err := tier.Fold(ctx, durable.Filter{}); err != nil {
		t.Fatal(err)
	}
	after := run()
	for k, b := range before {
		if !reflect.DeepEqual(b, after[k]) {
			t.Errorf("%s: unfolded %v\nfolded %v", k, b.Rows, after[k].Rows)
		}
	}
}

// A coverage table someone gave a unique index on the destination (one
// row per destination, as the table used to be keyed) cannot take a
// second checkpoint of a destination: Open must refuse it with
// ErrSchemaMismatch rather than accept it and fail later appends.
func TestUniqueIndexRefused(t *testing.T) {
	schema := freshSchema(t)
	advTier(t, schema)
	cov := pgx.Identifier{schema, "coverage"}.Sanitize()
	exec(t, "CREATE UNIQUE INDEX ON "+cov+" (sink, topic, partition)")
	tier, err := Open(ctx, Options{Pool: adminPool(t), Schema: schema})
	if err == nil {
		d := coverage.Destination{Sink: "s", Topic: "t", Partition: 0}
		err1 := tier.Append(ctx, durable.Checkpoint{Writer: "w", Name: "1", Ranges: oneRange(d, 0, 1)})
		err2 := tier.Append(ctx, durable.Checkpoint{Writer: "w", Name: "2", Ranges: oneRange(d, 1, 2)})
		t.Fatalf("Open accepted a coverage table with a unique index; appends then: %v, %v", err1, err2)
	}
	if !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("Open: %v, want ErrSchemaMismatch", err)
	}
	// On positions, ON CONFLICT DO NOTHING would drop a second position of
	// a partition without an error.
	exec(t, "DROP INDEX "+pgx.Identifier{schema, "coverage_sink_topic_partition_idx"}.Sanitize())
	exec(t, "CREATE UNIQUE INDEX ON "+pgx.Identifier{schema, "positions"}.Sanitize()+" (source, partition)")
	if _, err := Open(ctx, Options{Pool: adminPool(t), Schema: schema}); !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("Open with a unique index on positions: %v, want ErrSchemaMismatch", err)
	}
	exec(t, "DROP INDEX "+pgx.Identifier{schema, "positions_source_partition_idx"}.Sanitize())
	// A plain (non-unique) index someone added for reads is harmless.
	exec(t, "CREATE INDEX ON "+cov+" (sink, topic, partition)")
	if _, err := Open(ctx, Options{Pool: adminPool(t), Schema: schema}); err != nil {
		t.Fatalf("Open with a plain index: %v", err)
	}
}

// A fold that fails mid-statement (here its INSERT raises) rolls back:
// every row it deleted is there again.
func TestFoldFailsMidway(t *testing.T) {
	schema := freshSchema(t)
	tier := advTier(t, schema)
	d := coverage.Destination{Sink: "s", Topic: "t", Partition: 0}
	var want coverage.RangeSet
	appendRanges(t, tier, d, 0, 6, &want)
	cov := pgx.Identifier{schema, "coverage"}.Sanitize()
	fn := pgx.Identifier{schema, "no_merged_rows"}.Sanitize()
	exec(t, "CREATE FUNCTION "+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF (SELECT count(*) FROM unnest(NEW.covered)) > 1 THEN RAISE EXCEPTION 'no merged rows'; END IF;
			RETURN NEW;
		END $$`)
	exec(t, "CREATE TRIGGER no_merged_rows BEFORE INSERT ON "+cov+" FOR EACH ROW EXECUTE FUNCTION "+fn+"()")
	if _, err := tier.Fold(ctx, durable.Filter{}); err == nil {
		t.Fatal("the fold succeeded past a trigger refusing its row")
	}
	requireCoverage(t, tier, map[coverage.Destination]*coverage.RangeSet{d: &want}, "after the failed fold")
	if got := rowCount(t, schema); got != 6 {
		t.Fatalf("%d rows after the failed fold, want 6", got)
	}
}

// Ranges at the bounds of a batch id (0 and MaxBatchEnd) survive a
// multi-range checkpoint and a fold.
func TestBoundsFold(t *testing.T) {
	schema := freshSchema(t)
	tier := advTier(t, schema)
	d := coverage.Destination{Sink: "s", Topic: "t", Partition: 0}
	top := uint64(coverage.MaxBatchEnd)
	rs := []coverage.Range{{Start: 0, End: 1}, {Start: top - 2, End: top}}
	if err := tier.Append(ctx, durable.Checkpoint{Writer: "w", Name: "1", Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: rs}}}); err != nil {
		t.Fatal(err)
	}
	if err := tier.Append(ctx, durable.Checkpoint{Writer: "w", Name: "2", Ranges: oneRange(d, top-1, top)}); err != nil {
		t.Fatal(err)
	}
	if err := tier.Append(ctx, durable.Checkpoint{Writer: "w", Name: "3", Ranges: oneRange(d, top-1, top+1)}); err == nil {
		t.Fatal("a range past MaxBatchEnd was appended")
	}
	want, _ := coverage.NewRangeSet(rs...)
	if _, err := tier.Fold(ctx, durable.Filter{}); err != nil {
		t.Fatal(err)
	}
	requireCoverage(t, tier, map[coverage.Destination]*coverage.RangeSet{d: &want}, "after the fold")
}

// A stored source configured with a NUL in its name: its position cannot
// be held in PostgreSQL text. AppendWithPositions must refuse that
// position (returned in refused) and still commit the checkpoint, or every
// later checkpoint of the mirror fails with it and coverage lags forever.
func TestPositionNULRefused(t *testing.T) {
	schema := freshSchema(t)
	bad := "src\x00x"
	ps, err := OpenPositions(ctx, Options{Pool: adminPool(t), Schema: schema, FoldEvery: -1},
		coverage.Source{Name: bad, Regime: coverage.Stored}, coverage.Source{Name: "good", Regime: coverage.Stored})
	if err != nil {
		t.Fatal(err)
	}
	tier := advTier(t, schema)
	d := coverage.Destination{Sink: coverage.RawSink, Topic: "good", Partition: 0}
	c := durable.Checkpoint{Writer: "w", Name: "1", Ranges: oneRange(d, 0, 10)}
	saved, refused, err := ps.AppendWithPositions(ctx, tier, c, []coverage.Position{
		{Source: bad, Partition: 0, Cursor: []byte("c"), Batch: 9},
		{Source: "good", Partition: 0, Cursor: []byte("c"), Batch: 9},
	})
	if err != nil {
		t.Fatalf("a position PostgreSQL cannot hold failed the whole checkpoint: %v", err)
	}
	if saved != 1 || len(refused) != 1 {
		t.Fatalf("saved %d, refused %v; want 1 and the NUL source's", saved, refused)
	}
	if err := ps.SavePosition(ctx, coverage.Position{Source: bad, Partition: 0, Cursor: []byte("c"), Batch: 9}); !errors.Is(err, coverage.ErrInvalidPosition) {
		t.Fatalf("SavePosition of a NUL source: %v, want ErrInvalidPosition", err)
	}
	if got, err := ps.Positions(ctx, bad, 0); err != nil || len(got) != 0 {
		t.Fatalf("Positions of a NUL source: %v, %v; want none", got, err)
	}
	if got, err := ps.Positions(ctx, "good", 0); err != nil || len(got) != 1 {
		t.Fatalf("Positions of the good source: %v, %v; want the one saved", got, err)
	}
	if ok, err := tier.Landed(ctx, "w", "1"); err != nil || !ok {
		t.Fatalf("the checkpoint did not land: %v, %v", ok, err)
	}
}

// A fold whose INSERT adds no row (here a trigger drops merged rows, as a
// rule or trigger someone put on the table could) must not commit the
// DELETE of the rows it merged: nil from the statement is not the union
// being there.
func TestFoldInsertDropped(t *testing.T) {
	schema := freshSchema(t)
	tier := advTier(t, schema)
	d := coverage.Destination{Sink: "s", Topic: "t", Partition: 0}
	var want coverage.RangeSet
	appendRanges(t, tier, d, 0, 6, &want)
	cov := pgx.Identifier{schema, "coverage"}.Sanitize()
	fn := pgx.Identifier{schema, "drop_merged_rows"}.Sanitize()
	exec(t, "CREATE FUNCTION "+fn+`() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF (SELECT count(*) FROM unnest(NEW.covered)) > 1 THEN RETURN NULL; END IF;
			RETURN NEW;
		END $$`)
	exec(t, "CREATE TRIGGER drop_merged_rows BEFORE INSERT ON "+cov+" FOR EACH ROW EXECUTE FUNCTION "+fn+"()")
	_, ferr := tier.Fold(ctx, durable.Filter{})
	requireCoverage(t, tier, map[coverage.Destination]*coverage.RangeSet{d: &want}, fmt.Sprintf("after a fold whose row was dropped (fold: %v)", ferr))
	if ferr == nil {
		t.Fatal("a fold whose merged row was not inserted returned nil")
	}
	tx, err := adminPool(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	extra := make([]coverage.DestinationRanges, 0)
	for i := 100; i < 100+FoldRowsInTx; i++ {
		extra = append(extra, oneRange(d, uint64(2*i), uint64(2*i+1))...)
		if err := tier.RecordInTx(ctx, tx, "w", extra[len(extra)-1:]); err != nil {
			t.Logf("RecordInTx refused at row %d: %v", i, err)
			// A caller committing despite the error keeps every row: the
			// fold was undone, the insert was not.
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			for _, dr := range extra {
				_ = want.Add(dr.Ranges[0])
			}
			requireCoverage(t, tier, map[coverage.Destination]*coverage.RangeSet{d: &want}, "after committing past a refused fold")
			return
		}
	}
	t.Fatal("RecordInTx folded past FoldRowsInTx rows with the merged row dropped and returned nil")
}

// A table inheriting from coverage adds its rows to every read of it
// (SELECT without ONLY), ranges no checkpoint appended: Open must refuse.
func TestInheritingTableRefused(t *testing.T) {
	schema := freshSchema(t)
	advTier(t, schema)
	child := pgx.Identifier{schema, "coverage_extra"}.Sanitize()
	exec(t, "CREATE TABLE "+child+" () INHERITS ("+pgx.Identifier{schema, "coverage"}.Sanitize()+")")
	exec(t, "INSERT INTO "+child+" VALUES ('s', 't', 0, '{[0,100)}', 'x', now())")
	tier, err := Open(ctx, Options{Pool: adminPool(t), Schema: schema})
	if err == nil {
		got, _ := tier.Coverage(ctx, durable.Filter{})
		t.Fatalf("Open accepted a coverage table another inherits from; it covers %v, never appended", got)
	}
	if !errors.Is(err, ErrSchemaMismatch) {
		t.Fatalf("Open: %v, want ErrSchemaMismatch", err)
	}
}
