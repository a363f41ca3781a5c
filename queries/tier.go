package queries

import (
	"context"
	"database/sql/driver"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// FromTier: the coverage relation holds a durable tier's merged coverage,
// appended into a DuckDB table (OpenTier).
const FromTier Binding = "tier"

// OpenTier binds the coverage relation to a durable tier's committed
// coverage, read once: one row per merged range of every destination, so
// the canned queries answer as they do over the rows of the table the same
// checkpoints were appended to (the rows there are merged by the queries
// themselves). Each row's writer and recorded_at are its destination's
// last write when the tier is a durable.LastWriter (lag then measures from the
// last time a destination grew, not from each range's own checkpoint), else
// "" and NULL; checkpoint_id is "" (a tier merges checkpoints away). A tier
// has no data files or snapshots: coverage_files and coverage_snapshots are
// empty, and so is the files query. opts.Binding must be empty or FromTier.
//
// For the coverage table itself, Open binds its snapshot's files instead.
func OpenTier(ctx context.Context, t durable.Tier, opts Options) (*DB, error) {
	if opts.Binding != "" && opts.Binding != FromTier {
		return nil, fmt.Errorf("queries: binding %q applies to the coverage table's files; %s is bound as %q", opts.Binding, t.Name(), FromTier)
	}
	// Read before DuckDB opens: a tier that cannot be read costs nothing.
	cov, err := t.Coverage(ctx, durable.Filter{})
	if err != nil {
		return nil, fmt.Errorf("queries: reading %s: %w", t.Name(), err)
	}
	var last map[coverage.Destination]durable.LastWrite
	if lw, ok := t.(durable.LastWriter); ok {
		// Read after the coverage: a destination grown meanwhile shows a
		// later last write than its ranges, which only shrinks its lag.
		if last, err = lw.LastWrites(ctx, durable.Filter{}); err != nil {
			return nil, fmt.Errorf("queries: reading %s: %w", t.Name(), err)
		}
	}
	db, conn, catalog, err := openDuckDB(ctx)
	if err != nil {
		return nil, err
	}
	q := &DB{db: db, conn: conn, catalog: catalog, binding: FromTier, tier: t.Name()}
	if err := q.bindTier(ctx, cov, last); err != nil {
		_ = q.Close()
		return nil, fmt.Errorf("queries: binding %s: %w", t.Name(), err)
	}
	if err := q.bindStatesOf(ctx, t); err != nil {
		_ = q.Close()
		return nil, fmt.Errorf("queries: binding %s: %w", t.Name(), err)
	}
	return q, nil
}

// bindTier creates the relations and appends the merged coverage.
func (q *DB) bindTier(ctx context.Context, cov map[coverage.Destination]*coverage.RangeSet, last map[coverage.Destination]durable.LastWrite) error {
	for _, ddl := range []string{
		`CREATE TABLE coverage (` + coverageColumns + `)`,
		`CREATE TABLE coverage_files (sink VARCHAR, file_path VARCHAR, record_count BIGINT, file_size_in_bytes BIGINT)`,
		`CREATE TABLE coverage_snapshots (snapshot_id BIGINT, committed_at TIMESTAMPTZ, operation VARCHAR)`,
		extentsDDL,
		namedSinksDDL,
		statesDDL,
	} {
		if _, err := q.conn.ExecContext(ctx, ddl); err != nil {
			return err
		}
	}
	q.extentsBound, q.sinksBound = true, true
	return q.appendTo(ctx, "coverage", func(add func(...driver.Value) error) error {
		for _, d := range slices.SortedFunc(maps.Keys(cov), coverage.Destination.Compare) {
			writer, at := "", driver.Value(nil)
			if lw, ok := last[d]; ok {
				writer, at = lw.Writer, lw.At.UTC()
			}
			for r := range cov[d].All() {
				// The tiers refuse ranges past the signed 64-bit columns on
				// record; one here is a tier this version cannot show.
				if r.End > math.MaxInt64 {
					return fmt.Errorf("%s holds [%d,%d), past the coverage relation's BIGINT columns", d, r.Start, r.End)
				}
				if err := add(d.Sink, d.Topic, d.Partition, int64(r.Start), int64(r.End), writer, "", at); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
