package queries

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// attached counts the databases attached to the shared instance besides
// the one the counting DB attaches itself.
func attached(t *testing.T) int64 {
	t.Helper()
	q, err := Open(ctx, openTable(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	res, err := q.RunSQL(ctx, `SELECT count(*) FROM duckdb_databases() WHERE NOT internal`, Params{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Rows[0][0].(int64) - 1
}

// A text that switches its connection's database (USE) must not make the
// DB's later queries read another DB's snapshot: each query starts in the
// DB's own database.
func TestStrayUseDoesNotMisdirectLaterQueries(t *testing.T) {
	full := openTable(t)
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	if err := full.Append(ctx, durable.Checkpoint{Name: "c/1", Writer: "w", Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 0, End: 5}, {Start: 7, End: 9}}}}}); err != nil {
		t.Fatal(err)
	}
	a, err := Open(ctx, full, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, openTable(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, other := range []string{b.catalog, defaultCatalog} {
		if _, err := a.RunSQL(ctx, `USE `+other, Params{}); err != nil {
			t.Fatal(err)
		}
		res, err := a.Run(ctx, "coverage", Params{})
		if err != nil {
			t.Fatalf("after USE %s: %v", other, err)
		}
		if len(res.Rows) != 2 {
			t.Fatalf("after USE %s, the coverage query read %d rows, want its own 2", other, len(res.Rows))
		}
	}
}

// Closing a DB twice is harmless, as it was with an instance of its own.
func TestCloseTwice(t *testing.T) {
	q, err := Open(ctx, openTable(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatal(err)
	}
	if err := q.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// Opens that fail part way (contexts ending at random moments), queries
// cut short and DBs closed twice leave no database attached to the shared
// instance.
func TestOpenCloseCyclesLeaveNothingAttached(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	tbl := openTable(t)
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	if err := tbl.Append(ctx, durable.Checkpoint{Name: "c/1", Writer: "w", Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 0, End: 5}}}}}); err != nil {
		t.Fatal(err)
	}
	before := attached(t)
	failed := 0
	for range 100 {
		c, cancel := context.WithTimeout(ctx, time.Duration(r.IntN(40000))*time.Microsecond)
		q, err := Open(c, tbl, Options{})
		if err != nil {
			failed++
			cancel()
			continue
		}
		_, _ = q.Run(c, "gaps", Params{})
		cancel()
		_ = q.Close()
		if r.IntN(2) == 0 {
			_ = q.Close()
		}
	}
	t.Logf("%d of 100 opens failed", failed)
	if after := attached(t); after != before {
		t.Fatalf("%d databases attached before the cycles, %d after", before, after)
	}
}
