package queries

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/postgres"
	"github.com/covmirror/covmirror/recovery"
)

// TestPostgresFormsAgree: the PostgreSQL forms of the canned queries, run
// in the database over the coverage rows' multiranges, give the rows the
// DuckDB forms give over the same tier's coverage (OpenTier), under random
// histories with hostile names, random filters and named sinks (for every
// topic and per topic); and the
// form printed for psql, its parameters written in as literals, gives them
// too.
func TestPostgresFormsAgree(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 3))
	conn, err := pgx.Connect(ctx, catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	defer conn.Close(ctx)
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		schema := catalogtest.Namespace()
		t.Cleanup(func() { _, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") })
		tier, err := postgres.Open(ctx, postgres.Options{URL: catalogtest.PostgresURL(), Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		randomHistory(t, r, 1+r.IntN(12), tier)
		duck, err := OpenTier(ctx, tier, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for q := range 10 {
			p := Params{}
			if q > 0 {
				p = randomParams(r)
			}
			if r.IntN(3) == 0 {
				// a sink without rows, and one that may have some
				p.Sinks = []string{"ghost", sinks[r.IntN(len(sinks))]}
			}
			if r.IntN(3) == 0 {
				p.TopicSinks = randomTopicSinks(r, append([]string{"ghost"}, sinks...))
			}
			pp := pgParams(p)
			where := fmt.Sprintf("round %d, params %+v", round, p)
			for _, name := range []string{"coverage", "gaps", "summary", "lag"} {
				want, err := duck.Run(ctx, name, p)
				if errors.Is(err, recovery.ErrNoReference) {
					// No rows of the reference anywhere: a misspelt one. The
					// SQL form, which cannot refuse, finds no gaps rather
					// than every batch of every partition.
					if name == "gaps" {
						if got, err := tier.Query(ctx, name, pp); err != nil || len(got.Rows) > 0 {
							t.Fatalf("%s: gaps against a reference with no rows: %v, %v; want none", where, got.Rows, err)
						}
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %s in DuckDB: %v", where, name, err)
				}
				got, err := tier.Query(ctx, name, pp)
				if err != nil {
					t.Fatalf("%s: %s in PostgreSQL: %v", where, name, err)
				}
				if !reflect.DeepEqual(got.Columns, want.Columns) {
					t.Fatalf("%s: %s columns %v, DuckDB's %v", where, name, got.Columns, want.Columns)
				}
				if g, w := catalogtest.CellText(got.Rows), catalogtest.CellText(want.Rows); !reflect.DeepEqual(g, w) {
					t.Fatalf("%s: %s differs:\npostgres %v\nduckdb   %v", where, name, g, w)
				}
				text, err := postgres.QueryText(name, schema, &pp)
				if err != nil {
					t.Fatal(err)
				}
				rows, err := conn.Query(ctx, text)
				if err != nil {
					t.Fatalf("%s: %s as printed for psql: %v\n%s", where, name, err, text)
				}
				printed, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) ([]any, error) { return row.Values() })
				if err != nil {
					t.Fatalf("%s: %s as printed for psql: %v", where, name, err)
				}
				if g := catalogtest.CellText(printed); !reflect.DeepEqual(g, catalogtest.CellText(want.Rows)) {
					t.Fatalf("%s: %s as printed for psql differs:\npsql   %v\nduckdb %v", where, name, g, catalogtest.CellText(want.Rows))
				}
			}
		}
		if got, err := tier.Query(ctx, "gaps", postgres.QueryParams{Reference: "no-such-sink"}); err != nil || len(got.Rows) > 0 {
			t.Fatalf("round %d: gaps against a reference with no rows: %v, %v; want none", round, got.Rows, err)
		}
		_ = duck.Close()
		tier.Close()
	}
	if _, err := postgres.QueryText("files", "covmirror", nil); !errors.Is(err, postgres.ErrNoPostgresForm) {
		t.Fatalf("files in PostgreSQL: %v, want ErrNoPostgresForm", err)
	}
}
