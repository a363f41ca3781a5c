package postgres

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
)

func TestServerVersion(t *testing.T) {
	for _, c := range []struct {
		num int
		ok  bool
	}{{90624, false}, {130016, false}, {139999, false}, {140000, true}, {150020, true}, {170000, true}} {
		err := checkServerVersion(c.num)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrServerTooOld)) {
			t.Errorf("server_version_num %d: %v", c.num, err)
		}
	}
	// The test server is new enough, and Open reads its version.
	openTier(t, freshSchema(t))
}

// TestSchemaMismatch: a table of another shape is refused, named, and left
// as it is; nothing else is created beside it.
func TestSchemaMismatch(t *testing.T) {
	cases := []struct {
		name, ddl, want string
	}{
		{"other type", `CREATE TABLE %s.coverage (sink text NOT NULL, topic text NOT NULL, partition int8 NOT NULL, covered int8multirange NOT NULL,
			last_writer text NOT NULL, last_write timestamptz NOT NULL, PRIMARY KEY (sink, topic, partition))`, "coverage.partition is bigint, want integer"},
		{"extra column", `CREATE TABLE %s.coverage (sink text NOT NULL, topic text NOT NULL, partition int4 NOT NULL, covered int8multirange NOT NULL,
			last_writer text NOT NULL, last_write timestamptz NOT NULL, note text, PRIMARY KEY (sink, topic, partition))`, "coverage.note is not a column"},
		{"missing column", `CREATE TABLE %s.coverage (sink text NOT NULL, topic text NOT NULL, partition int4 NOT NULL, covered int8multirange NOT NULL,
			PRIMARY KEY (sink, topic, partition))`, "coverage.last_writer is missing"},
		{"nullable", `CREATE TABLE %s.coverage (sink text NOT NULL, topic text NOT NULL, partition int4 NOT NULL, covered int8multirange,
			last_writer text NOT NULL, last_write timestamptz NOT NULL, PRIMARY KEY (sink, topic, partition))`, "coverage.covered is nullable"},
		{"no primary key", `CREATE TABLE %s.checkpoints (writer text NOT NULL, name text NOT NULL, digest text NOT NULL, sinks text[] NOT NULL,
			ranges int8 NOT NULL, committed_at timestamptz NOT NULL)`, "checkpoints has primary key [], want [writer name]"},
		{"a view", `CREATE VIEW %s.positions AS SELECT 1 AS source`, "positions is not a plain table"},
		{"someone else's", `CREATE TABLE %s.coverage (id serial PRIMARY KEY, payload jsonb)`, "coverage.sink is missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			schema := freshSchema(t)
			q := pgx.Identifier{schema}.Sanitize()
			exec(t, "CREATE SCHEMA "+q)
			exec(t, strings.ReplaceAll(c.ddl, "%s", q))
			before := shapeOf(t, schema)
			_, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema})
			if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("open: %v, want ErrSchemaMismatch naming %q", err, c.want)
			}
			if after := shapeOf(t, schema); after != before {
				t.Fatalf("the schema changed:\n%s\nnow:\n%s", before, after)
			}
		})
	}
}

// shapeOf lists schema's relations and columns.
func shapeOf(t *testing.T, schema string) string {
	t.Helper()
	rows, err := adminPool(t).Query(ctx, `SELECT c.relname || ' ' || c.relkind::text || ' ' || coalesce(a.attname::text || ' ' || format_type(a.atttypid, a.atttypmod), '')
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0
		WHERE n.nspname = $1 ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestConcurrentOpen: many processes opening one new schema at once all
// succeed, and find it as created.
func TestConcurrentOpen(t *testing.T) {
	for range 3 {
		schema := freshSchema(t)
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				tier, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema})
				if err != nil {
					t.Error(err)
					return
				}
				tier.Close()
			})
		}
		wg.Wait()
	}
}

// TestCorruptCoverageRefused: a range the tier never writes (unbounded, or
// negative) is refused on read, never taken as coverage.
func TestCorruptCoverageRefused(t *testing.T) {
	schema := freshSchema(t)
	tier := openTier(t, schema)
	for _, bad := range []string{"{[5,)}", "{[-3,4)}"} {
		exec(t, "DELETE FROM "+tier.coverage)
		exec(t, "INSERT INTO "+tier.coverage+" (sink, topic, partition, covered, last_writer, last_write) VALUES ('s', 't', 0, $1::int8multirange, 'w', now())", bad)
		if _, err := tier.Coverage(ctx, durable.Filter{}); !errors.Is(err, coverage.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", bad, err)
		}
	}
}

// TestNondeterministicCollationRefused: a name column created beforehand
// with a collation that is not deterministic (case-insensitive ICU) is
// refused, named, with what to do: under it lake [0,10) and LAKE
// [100,110) would read as lake covering both, a lead. The test server
// must support ICU; without it the test fails.
func TestNondeterministicCollationRefused(t *testing.T) {
	for _, col := range []struct{ table, column, ddl string }{
		{"coverage", "sink", `CREATE TABLE %s.coverage (sink text COLLATE %[1]s.ci NOT NULL, topic text NOT NULL, partition int4 NOT NULL,
			covered int8multirange NOT NULL, last_writer text NOT NULL, last_write timestamptz NOT NULL)`},
		{"coverage", "topic", `CREATE TABLE %s.coverage (sink text NOT NULL, topic text COLLATE %[1]s.ci NOT NULL, partition int4 NOT NULL,
			covered int8multirange NOT NULL, last_writer text NOT NULL, last_write timestamptz NOT NULL)`},
		{"checkpoints", "writer", `CREATE TABLE %s.checkpoints (writer text COLLATE %[1]s.ci NOT NULL, name text NOT NULL, digest text NOT NULL,
			sinks text[] NOT NULL, ranges int8 NOT NULL, committed_at timestamptz NOT NULL, PRIMARY KEY (writer, name))`},
		{"positions", "source", `CREATE TABLE %s.positions (source text COLLATE %[1]s.ci NOT NULL, partition int4 NOT NULL, batch int8 NOT NULL,
			cursor bytea NOT NULL, saved_at timestamptz NOT NULL, PRIMARY KEY (source, partition, batch, cursor))`},
	} {
		t.Run(col.table+"."+col.column, func(t *testing.T) {
			schema := freshSchema(t)
			q := pgx.Identifier{schema}.Sanitize()
			exec(t, "CREATE SCHEMA "+q)
			if _, err := adminPool(t).Exec(ctx, "CREATE COLLATION "+q+".ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)"); err != nil {
				t.Fatalf("the test server cannot create an ICU collation (%v): it must be built with ICU (--with-icu) for this test", err)
			}
			exec(t, fmt.Sprintf(col.ddl, q))
			tier, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema})
			if err == nil {
				defer tier.Close()
				if col.column != "sink" {
					t.Fatalf("Open accepted %s.%s with a case-insensitive collation", col.table, col.column)
				}
				lake := coverage.Destination{Sink: "lake", Topic: "t"}
				LAKE := coverage.Destination{Sink: "LAKE", Topic: "t"}
				_ = tier.Append(ctx, durable.Checkpoint{Writer: "w", Name: "1", Ranges: append(oneRange(lake, 0, 10), oneRange(LAKE, 100, 110)...)})
				res, _ := tier.Query(ctx, "coverage", QueryParams{Sink: "lake"})
				t.Fatalf("Open accepted coverage.sink with a case-insensitive collation; lake's coverage now: %v", res.Rows)
			}
			want := col.table + "." + col.column + " has collation " + schema + ".ci, which is not deterministic"
			if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `COLLATE "C"`) {
				t.Fatalf("open: %v, want ErrSchemaMismatch naming %q and what to do", err, want)
			}
		})
	}
}
