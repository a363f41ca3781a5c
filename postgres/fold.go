package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// foldSQL replaces the rows of each destination of $1..$3 that has more
// than $4 rows with one row: their union, and the last writer and time.
// Each destination's rows are found through the coverage_destination index
// (a lateral lookup per destination, which the planner cannot turn into a
// scan of the table), so a fold reads only the rows it was given and costs
// what they cost, whatever the table holds. It is one statement: the rows
// it deletes are the rows it merges, so a row inserted meanwhile (not in
// its snapshot) stays as it is, and a row another fold deleted first is
// neither deleted nor merged again. Nothing is lost either way; the union
// is the same. Rows another transaction has locked (its own fold, still
// open) are passed over (SKIP LOCKED), so a fold neither waits on a
// caller's open transaction nor deadlocks with it; what it passes over
// stays as it is for a later fold.
const foldSQL = `
WITH d AS (
    SELECT DISTINCT sink, topic, partition
    FROM unnest($1::text[], $2::text[], $3::int4[]) AS d(sink, topic, partition)
),
targets AS (
    SELECT d.sink, d.topic, d.partition
    FROM d
    WHERE (SELECT count(*) FROM %[1]s c WHERE c.topic = d.topic AND c.partition = d.partition AND c.sink = d.sink) > $4
),
locked AS (
    SELECT l.row_id
    FROM targets t
    CROSS JOIN LATERAL (
        SELECT c.ctid AS row_id
        FROM %[1]s c
        WHERE c.topic = t.topic AND c.partition = t.partition AND c.sink = t.sink
        FOR UPDATE OF c SKIP LOCKED
    ) l
),
gone AS (
    DELETE FROM %[1]s c
    WHERE c.ctid = ANY (ARRAY(SELECT row_id FROM locked))
    RETURNING c.sink, c.topic, c.partition, c.covered, c.last_writer, c.last_write
),
merged AS (
    INSERT INTO %[1]s (sink, topic, partition, covered, last_writer, last_write)
    SELECT sink, topic, partition, range_agg(covered),
           (array_agg(last_writer ORDER BY last_write DESC, last_writer))[1], max(last_write)
    FROM gone
    GROUP BY sink, topic, partition
    RETURNING 1
)
SELECT (SELECT count(*) FROM (SELECT DISTINCT sink, topic, partition FROM gone) g), (SELECT count(*) FROM merged)`

// fold folds the destinations d that have more than over rows, in tx, and
// returns how many it folded. It checks that every destination whose rows
// it deleted got its merged row (a trigger on the table could drop it with
// a nil error), and if not undoes the fold, within a savepoint so that a
// caller's transaction (RecordInTx) committed despite the error keeps its
// rows.
func fold(ctx context.Context, tx pgx.Tx, schema string, d dests, over int) (int64, error) {
	if len(d.sinks) == 0 {
		return 0, nil
	}
	sp, err := tx.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("fold %d destinations: savepoint: %w", len(d.sinks), err)
	}
	defer func() { _ = sp.Rollback(ctx) }()
	sql := fmt.Sprintf(foldSQL, pgx.Identifier{schema, "coverage"}.Sanitize())
	var emptied, merged int64
	if err := sp.QueryRow(ctx, sql, d.sinks, d.topics, d.parts, over).Scan(&emptied, &merged); err != nil {
		return 0, fmt.Errorf("fold %d destinations: %w", len(d.sinks), err)
	}
	if merged != emptied {
		return 0, fmt.Errorf("fold %d destinations: deleted the rows of %d and inserted %d merged rows (a trigger or rule on the table?): undone", len(d.sinks), emptied, merged)
	}
	if err := sp.Commit(ctx); err != nil {
		return 0, fmt.Errorf("fold %d destinations: release the savepoint: %w", len(d.sinks), err)
	}
	return merged, nil
}

// Fold merges the rows of every destination f selects that has more than
// one into one row: their union, the last writer and time. It reads the
// whole table (or what f selects) to find them: it is for an operator or a
// compaction job (after a bulk load, say), while Append folds only what it
// wrote (Options.FoldEvery). Concurrent folds and appends are safe: a fold
// deletes and merges the same rows in one statement. Fold of the whole
// table (the zero Filter) also deletes every writer's checkpoint names
// older than Options.NameRetention, in batches of PruneBatch, and folds
// the deltas layout's checkpoints (FoldDeltas). It returns how many
// destinations' rows it folded.
func (t *Tier) Fold(ctx context.Context, f durable.Filter) (int64, error) {
	if noMatch(f) {
		return 0, nil
	}
	var folded int64
	err := t.inTx(ctx, func(tx pgx.Tx) (bool, error) {
		rows, err := tx.Query(ctx, "SELECT sink, topic, partition FROM "+t.coverage+filterSQL+" GROUP BY sink, topic, partition HAVING count(*) > 1 ORDER BY sink, topic, partition",
			filterArgs(f)...)
		if err != nil {
			return false, fmt.Errorf("find the destinations to fold: %w", err)
		}
		var d dests
		for rows.Next() {
			var dest coverage.Destination
			if err := rows.Scan(&dest.Sink, &dest.Topic, &dest.Partition); err != nil {
				rows.Close()
				return false, fmt.Errorf("find the destinations to fold: %w", err)
			}
			d.add(dest)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("find the destinations to fold: %w", err)
		}
		folded, err = fold(ctx, tx, t.opts.Schema, d, 1)
		return err == nil, err
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: fold %+v on %s: %w", f, t.name, err)
	}
	if f.Sink == "" && f.Topic == "" && f.Partition == nil && len(f.Partitions) == 0 {
		if _, err := t.PruneNames(ctx); err != nil {
			return folded, fmt.Errorf("postgres: fold on %s folded %d destinations, then: %w", t.name, folded, err)
		}
		if _, err := t.FoldDeltas(ctx); err != nil {
			return folded, fmt.Errorf("postgres: fold on %s folded %d destinations, then: %w", t.name, folded, err)
		}
	}
	return folded, nil
}

// foldWritten folds, in a transaction of its own, the destinations d that
// hold more than Options.FoldRows rows: Append's fold, which reads only
// their rows.
func (t *Tier) foldWritten(ctx context.Context, d dests) (int64, error) {
	var folded int64
	err := t.inTx(ctx, func(tx pgx.Tx) (bool, error) {
		var err error
		folded, err = fold(ctx, tx, t.opts.Schema, d, t.opts.FoldRows)
		return err == nil, err
	})
	return folded, err
}
