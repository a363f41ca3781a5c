package queries

import (
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// DBs share one DuckDB instance but nothing else: each sees its own
// snapshot's coverage, and a table one's query text creates is neither
// seen by another nor left behind once it closes.
func TestDBsAreIndependent(t *testing.T) {
	tbl := openTable(t)
	open := func() *DB {
		t.Helper()
		q, err := Open(ctx, tbl, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	count := func(q *DB) int64 {
		t.Helper()
		res, err := q.RunSQL(ctx, `SELECT count(*) FROM coverage`, Params{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Rows[0][0].(int64)
	}
	empty := open()
	defer empty.Close()
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	if err := tbl.Append(ctx, durable.Checkpoint{Name: "c/1", Writer: "w", Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 0, End: 5}, {Start: 7, End: 9}}}}}); err != nil {
		t.Fatal(err)
	}
	full := open()
	if got := count(empty); got != 0 {
		t.Fatalf("the DB opened before the append sees %d rows, want 0", got)
	}
	if got := count(full); got != 2 {
		t.Fatalf("the DB opened after the append sees %d rows, want 2", got)
	}
	if _, err := full.RunSQL(ctx, `CREATE TABLE scratch AS SELECT 1 AS x`, Params{}); err != nil {
		t.Fatal(err)
	}
	if _, err := empty.RunSQL(ctx, `SELECT * FROM scratch`, Params{}); err == nil {
		t.Fatal("one DB sees a table another created")
	}
	if err := full.Close(); err != nil {
		t.Fatal(err)
	}
	again := open()
	defer again.Close()
	if _, err := again.RunSQL(ctx, `SELECT * FROM scratch`, Params{}); err == nil {
		t.Fatal("a closed DB's table outlives it")
	}
}
