package reconcile_test

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/postgres"
	"github.com/covmirror/covmirror/reconcile"
)

var ctx = context.Background()

var pgAdmin struct {
	once sync.Once
	db   *sql.DB
	err  error
}

// pgDB is one database/sql handle on the test PostgreSQL. An unreachable
// server fails the test: it is never skipped.
func pgDB(t testing.TB) *sql.DB {
	t.Helper()
	pgAdmin.once.Do(func() {
		pgAdmin.db, pgAdmin.err = sql.Open(reconcile.DriverPostgres, catalogtest.PostgresURL())
		if pgAdmin.err == nil {
			pgAdmin.err = pgAdmin.db.PingContext(ctx)
		}
	})
	if pgAdmin.err != nil {
		t.Fatal(catalogtest.Unreachable(pgAdmin.err))
	}
	return pgAdmin.db
}

// pgSchema creates a fresh schema, dropped with everything in it when the
// test ends.
func pgSchema(t testing.TB) string {
	t.Helper()
	db := pgDB(t)
	schema := catalogtest.Namespace()
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA "`+schema+`"`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := db.ExecContext(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// durableTier is a PostgreSQL durable tier in a fresh schema.
func durableTier(t testing.TB) *postgres.Tier {
	t.Helper()
	pgDB(t)
	tier, err := postgres.Open(ctx, postgres.Options{URL: catalogtest.PostgresURL(), Schema: pgSchema(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tier.Close)
	return tier
}

// The scenario every sink runs: two partitions of topic "t", four
// committed ranges each, and batches deleted from the sink after their
// coverage was recorded.
var (
	committed = []coverage.Range{{Start: 0, End: 10}, {Start: 20, End: 30}, {Start: 40, End: 50}, {Start: 60, End: 70}}
	deleted   = map[int32][]uint64{0: {3, 4, 22, 45, 46, 47, 48, 49, 61}, 1: {7}}
	// wantAbsent is deleted as rows of sink.
	wantAbsent = func(sink string) []reconcile.Row {
		return []reconcile.Row{
			{Sink: sink, Topic: "t", Partition: 0, Start: 3, End: 5, Kind: reconcile.KindClaimedAbsent},
			{Sink: sink, Topic: "t", Partition: 0, Start: 22, End: 23, Kind: reconcile.KindClaimedAbsent},
			{Sink: sink, Topic: "t", Partition: 0, Start: 45, End: 50, Kind: reconcile.KindClaimedAbsent},
			{Sink: sink, Topic: "t", Partition: 0, Start: 61, End: 62, Kind: reconcile.KindClaimedAbsent},
			{Sink: sink, Topic: "t", Partition: 1, Start: 7, End: 8, Kind: reconcile.KindClaimedAbsent},
		}
	}
)

// record appends the committed ranges of sink to tier, as a writer would
// after the sink's acknowledgement.
func record(t testing.TB, tier durable.Tier, sink, name string) {
	t.Helper()
	var drs []coverage.DestinationRanges
	for _, p := range []int32{0, 1} {
		drs = append(drs, coverage.DestinationRanges{Destination: coverage.Destination{Sink: sink, Topic: "t", Partition: p}, Ranges: committed})
	}
	if err := tier.Append(ctx, durable.Checkpoint{Name: name, Writer: "test", Ranges: drs}); err != nil {
		t.Fatal(err)
	}
}

// spy records what a real checker was asked, so a sampled run's expected
// rows can be computed from the deletions.
type spy struct {
	reconcile.Checker
	mu    sync.Mutex
	asked map[coverage.Destination][]coverage.Range
}

func (s *spy) Held(ctx context.Context, d coverage.Destination, rs []coverage.Range) (*coverage.RangeSet, error) {
	s.mu.Lock()
	if s.asked == nil {
		s.asked = map[coverage.Destination][]coverage.Range{}
	}
	s.asked[d] = append(s.asked[d], rs...)
	s.mu.Unlock()
	return s.Checker.Held(ctx, d, rs)
}

// expectSampled is the rows of sink a run that asked what s records must
// report: the deleted batches inside the asked ranges, merged.
func (s *spy) expectSampled(sink string) []reconcile.Row {
	var out []reconcile.Row
	for _, p := range []int32{0, 1} {
		d := coverage.Destination{Sink: sink, Topic: "t", Partition: p}
		set := new(coverage.RangeSet)
		for _, r := range s.asked[d] {
			for _, id := range deleted[p] {
				if r.Contains(id) {
					_ = set.Add(coverage.Range{Start: id, End: id + 1})
				}
			}
		}
		for r := range set.All() {
			out = append(out, reconcile.Row{Sink: sink, Topic: "t", Partition: p, Start: r.Start, End: r.End, Kind: reconcile.KindClaimedAbsent})
		}
	}
	return out
}

// fast is Options for tests: no wait between checks, small pieces.
func fast(sinks ...string) reconcile.Options {
	return reconcile.Options{Sinks: sinks, MaxChecksPerSecond: 10_000, MaxBatchesPerCheck: 5}
}

func sameRows(t testing.TB, what string, got, want []reconcile.Row) {
	t.Helper()
	if want == nil {
		want = []reconcile.Row{}
	}
	if got == nil {
		got = []reconcile.Row{}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
	}
}

// mustFailNaming checks that rep and err say sink's check failed, naming
// it and mentioning want, and that no row of sink was reported.
func mustFailNaming(t testing.TB, rep reconcile.Report, err error, sink, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("sink %s: no error; report %+v", sink, rep)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("%q", sink)) || !strings.Contains(err.Error(), want) {
		t.Fatalf("error does not name sink %q and %q: %v", sink, want, err)
	}
	for _, r := range rep.Absent {
		if r.Sink == sink {
			t.Fatalf("a failed sink's row was reported absent: %+v", r)
		}
	}
	for _, c := range rep.Checked {
		if c.Sink == sink && !c.Failed {
			t.Fatalf("sink %s is not marked failed: %+v", sink, c)
		}
	}
}
