package postgres

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
)

// unindexedDDL is the schema as the tier created it before it had indexes
// (the statements Open ran then), with %[1]s the quoted schema.
var unindexedDDL = []string{
	`CREATE SCHEMA IF NOT EXISTS %[1]s`,
	`CREATE TABLE IF NOT EXISTS %[1]s."coverage" ("sink" text NOT NULL, "topic" text NOT NULL, "partition" integer NOT NULL, "covered" int8multirange NOT NULL, "last_writer" text NOT NULL, "last_write" timestamp with time zone NOT NULL)`,
	`ALTER TABLE %[1]s."coverage" REPLICA IDENTITY FULL`,
	`CREATE TABLE IF NOT EXISTS %[1]s."checkpoints" ("writer" text NOT NULL, "name" text NOT NULL, "digest" text NOT NULL, "sinks" text[] NOT NULL, "ranges" bigint NOT NULL, "committed_at" timestamp with time zone NOT NULL, PRIMARY KEY ("writer", "name"))`,
	`CREATE TABLE IF NOT EXISTS %[1]s."positions" ("source" text NOT NULL, "partition" integer NOT NULL, "batch" bigint NOT NULL, "cursor" bytea NOT NULL, "saved_at" timestamp with time zone NOT NULL, PRIMARY KEY ("source", "partition", "batch", "cursor"))`,
}

// createUnindexed creates schema as the tier did before it had indexes,
// and fills it with rows as its appends did: several rows for some
// destinations, and names.
func createUnindexed(t *testing.T, schema string) {
	t.Helper()
	for _, s := range unindexedDDL {
		exec(t, fmt.Sprintf(s, pgx.Identifier{schema}.Sanitize()))
	}
	cov := pgx.Identifier{schema, "coverage"}.Sanitize()
	exec(t, "INSERT INTO "+cov+` SELECT 'lake', 't' || (g % 7), g % 50, int8multirange(int8range(g * 10, g * 10 + 5)), 'pod-' || (g % 3), now()
		FROM generate_series(0, 499) g`)
	exec(t, "INSERT INTO "+pgx.Identifier{schema, "checkpoints"}.Sanitize()+` SELECT 'pod-' || (g % 3), 'ck-' || g, 'd', '{lake}', 1, now() FROM generate_series(0, 99) g`)
}

// indexesOf lists schema's indexes as "table index (columns) valid".
func indexesOf(t *testing.T, schema string) string {
	t.Helper()
	rows, err := adminPool(t).Query(ctx, `SELECT tablename || ' ' || indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// withoutTable is shape (tableShape's) without table's lines.
func withoutTable(shape, table string) string {
	var keep []string
	for _, line := range strings.Split(shape, "\n") {
		if !strings.HasPrefix(line, table+" ") {
			keep = append(keep, line)
		}
	}
	return strings.Join(keep, "\n")
}

// tableShape lists schema's tables and their columns only (no indexes).
func tableShape(t *testing.T, schema string) string {
	t.Helper()
	rows, err := adminPool(t).Query(ctx, `SELECT c.relname || ' ' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull || ' ' || c.relreplident::text
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 1`, schema)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestOpenAddsIndexes: tables created by the tier before it had indexes,
// with rows in them, get the indexes on Open (and the blobs table beside
// them), and nothing else changes:
// the same columns, the same coverage (read by SQL before and by the Tier
// after), every name still landed. A second Open finds them and writes
// nothing.
func TestOpenAddsIndexes(t *testing.T) {
	schema := freshSchema(t)
	createUnindexed(t, schema)
	shape := tableShape(t, schema)
	before := map[coverage.Destination]*coverage.RangeSet{}
	rows, err := adminPool(t).Query(ctx, "SELECT sink, topic, partition, lower(r), upper(r) FROM "+pgx.Identifier{schema, "coverage"}.Sanitize()+" CROSS JOIN LATERAL unnest(covered) r")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var d coverage.Destination
		var lo, hi int64
		if err := rows.Scan(&d.Sink, &d.Topic, &d.Partition, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		if before[d] == nil {
			before[d] = new(coverage.RangeSet)
		}
		_ = before[d].Add(coverage.Range{Start: uint64(lo), End: uint64(hi)})
	}
	if rows.Err() != nil || len(before) != 350 {
		t.Fatalf("read before Open: %v, %d destinations, want 350", rows.Err(), len(before))
	}
	if got := indexesOf(t, schema); strings.Contains(got, "coverage_destination") {
		t.Fatalf("the old schema has the index already:\n%s", got)
	}

	tier := openTier(t, schema)
	idx := indexesOf(t, schema)
	for _, want := range []string{
		`coverage coverage_destination CREATE INDEX coverage_destination ON ` + schema + `.coverage USING btree (topic, partition, sink)`,
		`checkpoints checkpoints_writer_committed CREATE INDEX checkpoints_writer_committed ON ` + schema + `.checkpoints USING btree (writer, committed_at)`,
	} {
		if !strings.Contains(idx, want) {
			t.Fatalf("after Open, no %q among the indexes:\n%s", want, idx)
		}
	}
	// The tables there keep their shape; the deltas layout's blobs table
	// and the gap_states table are added beside them.
	if got := tableShape(t, schema); withoutTable(withoutTable(got, "blobs"), "gap_states") != shape || !strings.Contains(got, "blobs key text true") {
		t.Fatalf("Open changed the tables' shape, or added no blobs table:\n%s\nnow:\n%s", shape, got)
	}
	requireCoverage(t, tier, before, "after Open added the index")
	if got, err := tier.Coverage(ctx, durable.Filter{}); err != nil || len(got) != len(before) {
		t.Fatalf("after Open: %d destinations (%v), want %d", len(got), err, len(before))
	}
	for i := range 100 {
		if ok, err := tier.Landed(ctx, fmt.Sprintf("pod-%d", i%3), fmt.Sprintf("ck-%d", i)); !ok || err != nil {
			t.Fatalf("name ck-%d after Open: %v, %v", i, ok, err)
		}
	}
	// A second Open finds every index: no second one, nothing written.
	openTier(t, schema)
	if got := indexesOf(t, schema); got != idx {
		t.Fatalf("a second Open changed the indexes:\n%s\nnow:\n%s", idx, got)
	}
}

// TestOpenFindsOperatorIndex: an index an operator built beforehand
// (CONCURRENTLY, under another name) with the same leading columns serves;
// Open adds no second one. One of the tier's name left invalid by a failed
// CREATE INDEX CONCURRENTLY is refused, with what to do.
func TestOpenFindsOperatorIndex(t *testing.T) {
	schema := freshSchema(t)
	createUnindexed(t, schema)
	cov := pgx.Identifier{schema, "coverage"}.Sanitize()
	exec(t, "CREATE INDEX CONCURRENTLY by_dest ON "+cov+" (topic, partition, sink, last_write)")
	openTier(t, schema)
	if idx := indexesOf(t, schema); strings.Contains(idx, "coverage_destination") || !strings.Contains(idx, "by_dest") {
		t.Fatalf("with an index by destination there, Open added another:\n%s", idx)
	}

	schema = freshSchema(t)
	createUnindexed(t, schema)
	cov = pgx.Identifier{schema, "coverage"}.Sanitize()
	// Division by zero at partition 5: the build fails and leaves the
	// index invalid.
	if _, err := adminPool(t).Exec(ctx, "CREATE INDEX CONCURRENTLY coverage_destination ON "+cov+" (topic, partition, sink, (1 / (partition - 5)))"); err == nil {
		t.Fatal("the failing index build succeeded")
	}
	_, err := Open(ctx, Options{URL: catalogtest.PostgresURL(), Schema: schema})
	if err == nil || !strings.Contains(err.Error(), "is not valid") || !strings.Contains(err.Error(), "DROP INDEX") {
		t.Fatalf("Open with an invalid index of its name: %v, want the index named and what to do", err)
	}
	exec(t, "DROP INDEX "+pgx.Identifier{schema, "coverage_destination"}.Sanitize())
	openTier(t, schema)
	if idx := indexesOf(t, schema); !strings.Contains(idx, "(topic, partition, sink)") {
		t.Fatalf("after dropping the invalid index, Open did not build it:\n%s", idx)
	}
	if errors.Is(err, ErrSchemaMismatch) {
		t.Fatal("an invalid index was taken for another shape")
	}
}
