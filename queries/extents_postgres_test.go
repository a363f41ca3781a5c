package queries

import (
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/postgres"
)

// pgParams are p as the PostgreSQL forms take them.
func pgParams(p Params) postgres.QueryParams {
	return postgres.QueryParams{Reference: p.Reference, Sink: p.Sink, Topic: p.Topic, Partition: p.Partition, Extents: p.Extents, Sinks: p.Sinks, TopicSinks: p.TopicSinks}
}

// TestAckedExtentsInPostgres: the extent cases DuckDB answers give the
// same rows in PostgreSQL's forms, run by Tier.Query with the extents as
// one parameter, and as printed for psql with them written in as a quoted
// JSON literal (a hostile topic's included); over an empty schema an
// extent is all hole; invalid extents are refused before anything runs.
func TestAckedExtentsInPostgres(t *testing.T) {
	conn, err := pgx.Connect(ctx, catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	defer conn.Close(ctx)
	open := func() (*postgres.Tier, string) {
		schema := catalogtest.Namespace()
		t.Cleanup(func() { _, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") })
		tier, err := postgres.Open(ctx, postgres.Options{URL: catalogtest.PostgresURL(), Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tier.Close)
		return tier, schema
	}
	tier, schema := open()
	var drs []coverage.DestinationRanges
	for d, rs := range extentHistory {
		drs = append(drs, coverage.DestinationRanges{Destination: d, Ranges: rs})
	}
	if err := tier.Append(ctx, durable.Checkpoint{Name: "pod/1", Writer: "pod", Ranges: drs}); err != nil {
		t.Fatal(err)
	}
	query := func(tier *postgres.Tier) engineRun {
		return func(name string, p Params) ([]string, [][]string, error) {
			res, err := tier.Query(ctx, name, pgParams(p))
			if err != nil {
				return nil, nil, err
			}
			return res.Columns, catalogtest.CellText(res.Rows), nil
		}
	}
	printed := func(schema string) engineRun {
		return func(name string, p Params) ([]string, [][]string, error) {
			pp := pgParams(p)
			text, err := postgres.QueryText(name, schema, &pp)
			if err != nil {
				return nil, nil, err
			}
			rows, err := conn.Query(ctx, text)
			if err != nil {
				return nil, nil, err
			}
			got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([]any, error) { return row.Values() })
			return nil, catalogtest.CellText(got), err
		}
	}
	checkExtentCases(t, "Tier.Query", query(tier))
	checkExtentCases(t, "printed for psql", printed(schema))

	empty, emptySchema := open()
	hostile := topics[2]
	p := Params{Extents: []coverage.Extent{{Topic: hostile, Partition: 2, Start: 4, End: 9}}}
	want := [][]string{{"raw", hostile, "2", "4", "9", "verify-reference", "NULL"}}
	for engine, run := range map[string]engineRun{"Tier.Query": query(empty), "printed for psql": printed(emptySchema)} {
		_, rows, err := run("gaps", p)
		if err != nil || len(rows) != 1 || !slices.Equal(rows[0], want[0]) {
			t.Fatalf("%s: gaps of an empty schema with an extent of %q: %v, %v; want %v", engine, hostile, rows, err, want)
		}
		bad := Params{Extents: []coverage.Extent{{Topic: "orders", End: 4}, {Topic: "orders", End: 5}}}
		if _, _, err := run("gaps", bad); !errors.Is(err, coverage.ErrInvalidExtent) {
			t.Fatalf("%s: a partition given twice: %v, want ErrInvalidExtent", engine, err)
		}
	}
}
