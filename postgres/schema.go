package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

var (
	// ErrServerTooOld: the server is older than PostgreSQL 14, which has
	// no multirange types. Nothing was created; use a newer server.
	ErrServerTooOld = errors.New("PostgreSQL server too old: covmirror needs 14 or later")

	// ErrSchemaMismatch: a table the tier uses exists with another shape
	// (a column missing, extra or of another type, another primary key, a
	// unique index or exclusion constraint besides it, a table inheriting
	// from it, or not a table). It is left as it is, never altered: point
	// Options.Schema elsewhere or move the table aside.
	ErrSchemaMismatch = errors.New("existing table has another shape")
)

// minServerVersion is PostgreSQL 14 in server_version_num form: multiranges
// and range_agg came with it.
const minServerVersion = 140000

// checkServerVersion refuses a server_version_num below 14.
func checkServerVersion(num int) error {
	if num < minServerVersion {
		return fmt.Errorf("postgres: %w (server_version_num %d)", ErrServerTooOld, num)
	}
	return nil
}

// column is one column as the tier creates it and expects it.
type column struct {
	name, typ string // typ as format_type prints it
}

// table is a table the tier owns: its columns and primary key.
type table struct {
	name    string
	columns []column
	key     []string
}

// tables are the tier's tables. Every column is NOT NULL.
var tables = []table{
	// coverage has no key: a checkpoint is an append, and a destination
	// may have several rows until a fold. Its one index (see indexes)
	// serves reads and folds by destination. REPLICA IDENTITY FULL lets a
	// publication that replicates deletes (a fold's) carry them without a
	// key.
	{"coverage", []column{
		{"sink", "text"}, {"topic", "text"}, {"partition", "integer"},
		{"covered", "int8multirange"},
		{"last_writer", "text"}, {"last_write", "timestamp with time zone"},
	}, nil},
	{"checkpoints", []column{
		{"writer", "text"}, {"name", "text"}, {"digest", "text"},
		{"sinks", "text[]"}, {"ranges", "bigint"},
		{"committed_at", "timestamp with time zone"},
	}, []string{"writer", "name"}},
	{"positions", []column{
		{"source", "text"}, {"partition", "integer"}, {"batch", "bigint"},
		{"cursor", "bytea"}, {"saved_at", "timestamp with time zone"},
	}, []string{"source", "partition", "batch", "cursor"}},
	// blobs is the deltas layout's store (Blobs): its key is in byte
	// order (collation "C", see cCollated), so that a List of a prefix is
	// one range of the primary key.
	{"blobs", []column{
		{"key", "text"}, {"version", "bigint"}, {"data", "bytea"},
	}, []string{"key"}},
	// gap_states holds the gap state events (package gapstate), one row
	// per event id, appended and never updated: a set merged by union. The
	// queries read it beside coverage; nothing reads it as coverage.
	{"gap_states", []column{
		{"id", "text"}, {"sink", "text"}, {"topic", "text"}, {"partition", "integer"},
		{"range_start", "bigint"}, {"range_end", "bigint"}, {"state", "text"},
		{"reason", "text"}, {"decided_by", "text"}, {"decided_at", "timestamp with time zone"},
	}, []string{"id"}},
}

// cCollated are the columns (table.column) created with collation "C":
// reads of them compare and sort in byte order, which a key index in
// that collation serves. A table created otherwise is still read
// correctly (every query says COLLATE "C"), only by a slower plan.
var cCollated = map[string]bool{"blobs.key": true}

// createSQL is t's CREATE TABLE IF NOT EXISTS in schema, and for a table
// without a key, the replica identity a publication needs to carry its
// deletes.
func (t table) createSQL(schema string) []string {
	name := pgx.Identifier{schema, t.name}.Sanitize()
	defs := make([]string, 0, len(t.columns)+1)
	for _, c := range t.columns {
		def := pgx.Identifier{c.name}.Sanitize() + " " + c.typ
		if cCollated[t.name+"."+c.name] {
			def += ` COLLATE "C"`
		}
		defs = append(defs, def+" NOT NULL")
	}
	if len(t.key) == 0 {
		return []string{"CREATE TABLE IF NOT EXISTS " + name + " (" + strings.Join(defs, ", ") + ")",
			"ALTER TABLE " + name + " REPLICA IDENTITY FULL"}
	}
	keys := make([]string, len(t.key))
	for i, k := range t.key {
		keys[i] = pgx.Identifier{k}.Sanitize()
	}
	defs = append(defs, "PRIMARY KEY ("+strings.Join(keys, ", ")+")")
	return []string{"CREATE TABLE IF NOT EXISTS " + name + " (" + strings.Join(defs, ", ") + ")"}
}

// querier is what the schema checks need of a pool, a connection or a
// transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// ensureSchema creates the schema, the missing tables and the missing
// indexes, and refuses a table of another shape. An existing table is
// never altered: at most an index is added to it (see tableIndex). When
// every table and index is there as expected it writes nothing, so a role
// without CREATE can open an existing schema.
func ensureSchema(ctx context.Context, db interface {
	querier
	Begin(ctx context.Context) (pgx.Tx, error)
}, schema string) error {
	missing, err := checkShape(ctx, db, schema)
	if err != nil {
		return err
	}
	noIndex, err := missingIndexes(ctx, db, schema)
	if err != nil || len(missing)+len(noIndex) == 0 {
		return err
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: create schema %q: %w", schema, err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// Concurrent CREATE ... IF NOT EXISTS can still collide on the
	// catalogs' unique indexes; the lock makes openers take turns.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended('covmirror/postgres/schema:' || $1, 0))", schema); err != nil {
		return fmt.Errorf("postgres: lock for creating schema %q: %w", schema, err)
	}
	// Building an index waits for the table's writers to finish and holds
	// back the next ones meanwhile: a transaction left open on the table
	// would stop every writer behind it. Give up instead, and say so.
	if _, err := tx.Exec(ctx, "SET LOCAL lock_timeout = '10s'"); err != nil {
		return fmt.Errorf("postgres: create schema %q: %w", schema, err)
	}
	stmts := []string{"CREATE SCHEMA IF NOT EXISTS " + pgx.Identifier{schema}.Sanitize()}
	for _, t := range tables {
		if slices.Contains(missing, t.name) { // a table there already is never altered
			stmts = append(stmts, t.createSQL(schema)...)
		}
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("postgres: create schema %q: %s: %w", schema, s, err)
		}
	}
	// Under the lock: another opener may have built them meanwhile.
	if noIndex, err = missingIndexes(ctx, tx, schema); err != nil {
		return err
	}
	for _, ix := range noIndex {
		s := ix.createSQL(schema)
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("postgres: schema %q: add the index the tier needs on table %s (no lock within 10s means a transaction is open on the table; a role that does not own the table cannot build it, its owner can, with CONCURRENTLY to let writers on): %s: %w", schema, ix.table, s, err)
		}
	}
	if missing, err := checkShape(ctx, tx, schema); err != nil {
		return err
	} else if len(missing) > 0 {
		return fmt.Errorf("postgres: schema %q: tables %v still missing after creating them", schema, missing)
	}
	if noIndex, err := missingIndexes(ctx, tx, schema); err != nil {
		return err
	} else if len(noIndex) > 0 {
		return fmt.Errorf("postgres: schema %q: index %s still missing after creating it: a relation of that name that is not this index is in the schema (rename it, and open again)", schema, noIndex[0].name)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: create schema %q: commit: %w", schema, err)
	}
	return nil
}

// checkShape returns the tier's tables missing from schema, or
// ErrSchemaMismatch naming every difference of the ones there.
func checkShape(ctx context.Context, q querier, schema string) (missing []string, err error) {
	names := make([]string, len(tables))
	for i, t := range tables {
		names[i] = t.name
	}
	type found struct {
		kind    string
		columns map[string]column
		notNull map[string]bool
		key     []string
		unique  []string // unique indexes and exclusion constraints but the key
		// folding are the columns whose collation is not deterministic,
		// with that collation's name.
		folding  map[string]string
		children []string // tables inheriting from it
	}
	got := map[string]*found{}
	rows, err := q.Query(ctx, `
		SELECT c.relname, c.relkind::text, a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
		       CASE WHEN NOT coll.collisdeterministic THEN format('%I.%I', cn.nspname, coll.collname) END
		FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace
		LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
		LEFT JOIN pg_collation coll ON coll.oid = a.attcollation
		LEFT JOIN pg_namespace cn ON cn.oid = coll.collnamespace
		WHERE n.nspname = $1 AND c.relname = ANY($2)`, schema, names)
	if err != nil {
		return nil, fmt.Errorf("postgres: read the shape of schema %q: %w", schema, err)
	}
	for rows.Next() {
		var rel, kind string
		var col, typ, folding *string
		var notNull *bool
		if err := rows.Scan(&rel, &kind, &col, &typ, &notNull, &folding); err != nil {
			return nil, fmt.Errorf("postgres: read the shape of schema %q: %w", schema, err)
		}
		f := got[rel]
		if f == nil {
			f = &found{kind: kind, columns: map[string]column{}, notNull: map[string]bool{}, folding: map[string]string{}}
			got[rel] = f
		}
		if col != nil {
			f.columns[*col] = column{*col, *typ}
			f.notNull[*col] = *notNull
			if folding != nil {
				f.folding[*col] = *folding
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read the shape of schema %q: %w", schema, err)
	}
	rows, err = q.Query(ctx, `
		SELECT c.relname, array_agg(a.attname::text ORDER BY k.ord)
		FROM pg_index i
		JOIN pg_class c ON c.oid = i.indrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
		WHERE i.indisprimary AND n.nspname = $1 AND c.relname = ANY($2)
		GROUP BY c.relname`, schema, names)
	if err != nil {
		return nil, fmt.Errorf("postgres: read the primary keys of schema %q: %w", schema, err)
	}
	for rows.Next() {
		var rel string
		var key []string
		if err := rows.Scan(&rel, &key); err != nil {
			return nil, fmt.Errorf("postgres: read the primary keys of schema %q: %w", schema, err)
		}
		if f := got[rel]; f != nil {
			f.key = key
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read the primary keys of schema %q: %w", schema, err)
	}
	// A unique index or exclusion constraint besides the key refuses rows
	// the tier must be able to add (a second row of a destination before a
	// fold, a second position of a partition) or, under ON CONFLICT DO
	// NOTHING, drops them without an error.
	rows, err = q.Query(ctx, `
		SELECT c.relname, ic.relname
		FROM pg_index i
		JOIN pg_class c ON c.oid = i.indrelid
		JOIN pg_class ic ON ic.oid = i.indexrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE (i.indisunique OR i.indisexclusion) AND NOT i.indisprimary AND n.nspname = $1 AND c.relname = ANY($2)
		ORDER BY 1, 2`, schema, names)
	if err != nil {
		return nil, fmt.Errorf("postgres: read the unique indexes of schema %q: %w", schema, err)
	}
	for rows.Next() {
		var rel, index string
		if err := rows.Scan(&rel, &index); err != nil {
			return nil, fmt.Errorf("postgres: read the unique indexes of schema %q: %w", schema, err)
		}
		if f := got[rel]; f != nil {
			f.unique = append(f.unique, index)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read the unique indexes of schema %q: %w", schema, err)
	}
	// A table inheriting from one of the tier's adds its rows to every
	// read of it: coverage no checkpoint appended.
	rows, err = q.Query(ctx, `
		SELECT p.relname, format('%I.%I', cn.nspname, c.relname)
		FROM pg_inherits h
		JOIN pg_class p ON p.oid = h.inhparent
		JOIN pg_namespace n ON n.oid = p.relnamespace
		JOIN pg_class c ON c.oid = h.inhrelid
		JOIN pg_namespace cn ON cn.oid = c.relnamespace
		WHERE n.nspname = $1 AND p.relname = ANY($2)
		ORDER BY 1, 2`, schema, names)
	if err != nil {
		return nil, fmt.Errorf("postgres: read the tables inheriting from schema %q's: %w", schema, err)
	}
	for rows.Next() {
		var rel, child string
		if err := rows.Scan(&rel, &child); err != nil {
			return nil, fmt.Errorf("postgres: read the tables inheriting from schema %q's: %w", schema, err)
		}
		if f := got[rel]; f != nil {
			f.children = append(f.children, child)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: read the tables inheriting from schema %q's: %w", schema, err)
	}

	var diffs []string
	for _, t := range tables {
		f := got[t.name]
		if f == nil {
			missing = append(missing, t.name)
			continue
		}
		if f.kind != "r" {
			diffs = append(diffs, fmt.Sprintf("%s is not a plain table (relkind %q)", t.name, f.kind))
			continue
		}
		want := map[string]bool{}
		for _, c := range t.columns {
			want[c.name] = true
			g, ok := f.columns[c.name]
			switch {
			case !ok:
				diffs = append(diffs, fmt.Sprintf("%s.%s is missing", t.name, c.name))
			case g.typ != c.typ:
				diffs = append(diffs, fmt.Sprintf("%s.%s is %s, want %s", t.name, c.name, g.typ, c.typ))
			case !f.notNull[c.name]:
				diffs = append(diffs, fmt.Sprintf("%s.%s is nullable, want NOT NULL", t.name, c.name))
			case f.folding[c.name] != "":
				// format_type does not show a collation. One that is not
				// deterministic compares names equal that are not (lake
				// and LAKE, under a case-insensitive one): one sink's
				// coverage would count as another's, a lead.
				diffs = append(diffs, fmt.Sprintf("%s.%s has collation %s, which is not deterministic (it can compare distinct names equal, counting one's coverage as another's): give the column a deterministic collation (ALTER TABLE %s.%s ALTER COLUMN %s TYPE %s COLLATE \"C\") or let Open create the tables in a new schema",
					t.name, c.name, f.folding[c.name], pgx.Identifier{schema}.Sanitize(), t.name, c.name, c.typ))
			}
		}
		var extra []string
		for name := range f.columns {
			if !want[name] {
				extra = append(extra, name)
			}
		}
		slices.Sort(extra)
		for _, name := range extra {
			diffs = append(diffs, fmt.Sprintf("%s.%s is not a column the tier knows", t.name, name))
		}
		if !slices.Equal(f.key, t.key) {
			diffs = append(diffs, fmt.Sprintf("%s has primary key %v, want %v", t.name, f.key, t.key))
		}
		for _, index := range f.unique {
			diffs = append(diffs, fmt.Sprintf("%s has unique index or exclusion constraint %s besides its key", t.name, index))
		}
		for _, child := range f.children {
			diffs = append(diffs, fmt.Sprintf("table %s inherits from %s, adding its rows to every read", child, t.name))
		}
	}
	if len(diffs) > 0 {
		return nil, fmt.Errorf("postgres: schema %q (left as it is): %w: %s", schema, ErrSchemaMismatch, strings.Join(diffs, "; "))
	}
	return missing, nil
}
