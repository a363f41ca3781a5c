package queries

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/postgres"
	"github.com/covmirror/covmirror/recovery"
)

// TestNamedSinksHostileNamesAgree: DuckDB's named_sinks and PostgreSQL's $6
// (run and printed for psql) give the planner's gaps for named sinks with
// quotes, backslashes, LIKE wildcards, JSON syntax, unicode (composed and
// decomposed), case variants, duplicates, the reference, and a name of
// MaxNameLen bytes.
func TestNamedSinksHostileNamesAgree(t *testing.T) {
	long := strings.Repeat("é", coverage.MaxNameLen/2)
	named := []string{"it's", `"dq"`, "ünï🦆", long, `a\b`, `%_`, "raw", "lake", "it's", "Lake", "NULL", " sp ",
		`","`, `{"a":1}`, `["x"]`, "\u00e9", "e\u0301", "'); DROP TABLE x; --", "$1", "{{sinks}}"}
	d := func(sink string) coverage.Destination {
		return coverage.Destination{Sink: sink, Topic: "t", Partition: 0}
	}
	ranges := []coverage.DestinationRanges{
		{Destination: d("raw"), Ranges: []coverage.Range{{Start: 0, End: 10}}},
		{Destination: d("lake"), Ranges: []coverage.Range{{Start: 0, End: 4}}},
		{Destination: d("it's"), Ranges: []coverage.Range{{Start: 0, End: 3}}},
		{Destination: d("e\u0301"), Ranges: []coverage.Range{{Start: 0, End: 10}}},
	}
	ckpt := durable.Checkpoint{Name: "pod/1", Writer: "pod", Ranges: ranges}
	tbl := tabletest.EmbeddedTable(t)
	if err := tbl.Append(ctx, ckpt); err != nil {
		t.Fatal(err)
	}
	planned, err := recovery.CommittedGaps(ctx, tbl, recovery.GapsFilter{Reference: "raw", Sinks: named})
	if err != nil {
		t.Fatal(err)
	}
	var want [][]string
	for _, g := range planned {
		want = append(want, []string{g.Sink, g.Topic, fmt.Sprint(g.Partition), fmt.Sprint(g.Start), fmt.Sprint(g.End)})
	}
	if len(want) == 0 {
		t.Fatal("the planner found no gaps")
	}
	check := func(engine string, rows [][]string) {
		t.Helper()
		for i := range rows {
			rows[i] = rows[i][:min(len(rows[i]), 5)] // the kind and event are the gap spec's
		}
		if !reflect.DeepEqual(rows, want) {
			t.Errorf("%s: gaps with hostile named sinks\n got %q\nwant %q", engine, rows, want)
		}
	}

	db, err := Open(ctx, tbl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	res, err := db.Run(ctx, "gaps", Params{Reference: "raw", Sinks: named})
	if err != nil {
		t.Fatal(err)
	}
	check("DuckDB", catalogtest.CellText(res.Rows))

	conn, err := pgx.Connect(ctx, catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	defer conn.Close(ctx)
	schema := catalogtest.Namespace()
	t.Cleanup(func() { _, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") })
	tier, err := postgres.Open(ctx, postgres.Options{URL: catalogtest.PostgresURL(), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer tier.Close()
	if err := tier.Append(ctx, ckpt); err != nil {
		t.Fatal(err)
	}
	pp := postgres.QueryParams{Reference: "raw", Sinks: named}
	pres, err := tier.Query(ctx, "gaps", pp)
	if err != nil {
		t.Fatal(err)
	}
	check("PostgreSQL Tier.Query", catalogtest.CellText(pres.Rows))
	text, err := postgres.QueryText("gaps", schema, &pp)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([]any, error) { return row.Values() })
	if err != nil {
		t.Fatal(err)
	}
	check("PostgreSQL printed", catalogtest.CellText(got))
}

// TestNamedSinksInvalidRefusedEverywhere: a named sink no destination can
// have (empty, too long, a control character, invalid UTF-8) is refused by
// the planner, DuckDB and both PostgreSQL forms alike.
func TestNamedSinksInvalidRefusedEverywhere(t *testing.T) {
	d := coverage.Destination{Sink: "raw", Topic: "t"}
	ckpt := durable.Checkpoint{Name: "pod/1", Writer: "pod", Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 0, End: 10}}}}}
	tbl := tabletest.EmbeddedTable(t)
	if err := tbl.Append(ctx, ckpt); err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, tbl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := pgx.Connect(ctx, catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	defer conn.Close(ctx)
	schema := catalogtest.Namespace()
	t.Cleanup(func() { _, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") })
	tier, err := postgres.Open(ctx, postgres.Options{URL: catalogtest.PostgresURL(), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer tier.Close()
	if err := tier.Append(ctx, ckpt); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", strings.Repeat("x", coverage.MaxNameLen+1), "a\nb", "a\x00b", "\xff"} {
		planned, errPlan := recovery.CommittedGaps(ctx, tbl, recovery.GapsFilter{Reference: "raw", Sinks: []string{bad}})
		_, errDuck := db.Run(ctx, "gaps", Params{Reference: "raw", Sinks: []string{bad}})
		pp := postgres.QueryParams{Reference: "raw", Sinks: []string{bad}}
		_, errPG := tier.Query(ctx, "gaps", pp)
		_, errText := postgres.QueryText("gaps", schema, &pp)
		if (errPlan == nil) != (errDuck == nil) || (errPlan == nil) != (errPG == nil) || (errPlan == nil) != (errText == nil) {
			t.Errorf("named sink %.40q: planner %d gaps, err %v; DuckDB %.90v; PostgreSQL %.90v; printed %.90v", bad, len(planned), errPlan, errDuck, errPG, errText)
		}
	}
}
