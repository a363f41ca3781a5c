package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// tableIndex is a btree index the tier needs on one of its tables. Any
// valid btree index whose leading key columns are these serves (an
// operator may have built it beforehand under another name); Open creates
// this one where none does.
type tableIndex struct {
	name, table string
	columns     []string
}

// indexes are the tier's indexes besides the primary keys. None is
// unique: a destination has several rows until a fold.
var indexes = []tableIndex{
	// Append's pruning of its writer's expired names; lookups by (writer,
	// name) use the primary key. First: Open builds them in this order,
	// the order in which Append locks the tables, so a build beside
	// running writers does not cross them into a deadlock.
	{"checkpoints_writer_committed", "checkpoints", []string{"writer", "committed_at"}},
	// Every read and fold by destination: topic first, so that the
	// recovery planner's and a new owner's reads of a (topic, partition)
	// across its sinks use it as a fold's lookups of whole destinations
	// do. A read by sink alone scans the table.
	{"coverage_destination", "coverage", []string{"topic", "partition", "sink"}},
	// Reads of gap states by (topic, partition), as the planner's of
	// coverage; the key serves lookups by ID.
	{"gap_states_destination", "gap_states", []string{"topic", "partition", "sink"}},
}

// indexedTables are the tables indexes names.
func indexedTables() []string {
	var out []string
	for _, ix := range indexes {
		if !slices.Contains(out, ix.table) {
			out = append(out, ix.table)
		}
	}
	return out
}

// createSQL is ix's CREATE INDEX IF NOT EXISTS in schema.
//
// Not CONCURRENTLY: that cannot run in the transaction holding Open's
// advisory lock, waits for every transaction open on the table (a sink's
// own RecordInTx transaction among them) rather than only for writers,
// and a build that fails leaves an invalid index behind that IF NOT
// EXISTS then takes as present. A plain build blocks the table's writers
// (not its readers) while it runs, once: on a folded table of about one
// row per destination (100,000 rows) that is a fraction of a second. An
// operator with a large unfolded table builds it CONCURRENTLY beforehand
// (Open's error names the statement when it cannot build it), and Open finds it.
func (ix tableIndex) createSQL(schema string) string {
	cols := make([]string, len(ix.columns))
	for i, c := range ix.columns {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	return "CREATE INDEX IF NOT EXISTS " + pgx.Identifier{ix.name}.Sanitize() + " ON " +
		pgx.Identifier{schema, ix.table}.Sanitize() + " (" + strings.Join(cols, ", ") + ")"
}

// missingIndexes returns the indexes of the tables present in schema that
// no valid index serves. An index of the tier's name that is not valid (a
// CREATE INDEX CONCURRENTLY that failed) is an error saying to drop it:
// IF NOT EXISTS would pass over it.
func missingIndexes(ctx context.Context, q querier, schema string) ([]tableIndex, error) {
	type found struct {
		name         string
		valid, plain bool // plain: btree, no predicate, no expression
		columns      []string
	}
	got := map[string][]found{}
	present := map[string]bool{}
	rows, err := q.Query(ctx, `
		SELECT c.relname, ic.relname, i.indisvalid,
		       am.amname = 'btree' AND i.indpred IS NULL AND i.indexprs IS NULL,
		       coalesce((SELECT array_agg(a.attname::text ORDER BY k.ord)
		                 FROM unnest(i.indkey[0:i.indnkeyatts-1]) WITH ORDINALITY AS k(attnum, ord)
		                 JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum), '{}')
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_index i ON i.indrelid = c.oid
		LEFT JOIN pg_class ic ON ic.oid = i.indexrelid
		LEFT JOIN pg_am am ON am.oid = ic.relam
		WHERE n.nspname = $1 AND c.relkind = 'r' AND c.relname = ANY($2)`, schema, indexedTables())
	if err != nil {
		return nil, fmt.Errorf("postgres: read the indexes of schema %q: %w", schema, err)
	}
	for rows.Next() {
		var table string
		var name *string
		var valid, plain *bool
		var cols []string
		if err := rows.Scan(&table, &name, &valid, &plain, &cols); err != nil {
			return nil, fmt.Errorf("postgres: read the indexes of schema %q: %w", schema, err)
		}
		present[table] = true
		if name != nil {
			got[table] = append(got[table], found{*name, *valid, *plain, cols})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read the indexes of schema %q: %w", schema, err)
	}
	var missing []tableIndex
	for _, ix := range indexes {
		if !present[ix.table] {
			continue
		}
		served := false
		for _, f := range got[ix.table] {
			if f.name == ix.name && !f.valid {
				return nil, fmt.Errorf("postgres: schema %q: index %s on %s is not valid (a CREATE INDEX CONCURRENTLY that failed?): drop it (DROP INDEX %s) and open again, which builds it",
					schema, ix.name, ix.table, pgx.Identifier{schema, ix.name}.Sanitize())
			}
			if f.valid && f.plain && len(f.columns) >= len(ix.columns) && slices.Equal(f.columns[:len(ix.columns)], ix.columns) {
				served = true
			}
		}
		if !served {
			missing = append(missing, ix)
		}
	}
	return missing, nil
}
