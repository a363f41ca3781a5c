package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// execer is what a write needs: a pool, a connection or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// insertSQL adds one row per destination holding the new ranges. A
// destination's coverage is the union of its rows (range_agg), so an
// insert can only add to it: nothing another writer wrote is read, locked
// or rewritten, and a checkpoint costs about what a plain INSERT of its
// rows costs. Fold merges a destination's rows into one. A destination
// with one range (the usual checkpoint) travels as two int8s; one with
// more as a multirange literal ('{[lo,hi),...}', parsed and normalized by
// the server), since pgx has no codec for an array of multiranges and
// aggregating flat arrays with range_agg spilled to disk at 100,000
// destinations.
const insertSQL = `
INSERT INTO %s (sink, topic, partition, covered, last_writer, last_write)
SELECT d.sink, d.topic, d.partition,
       CASE WHEN d.many IS NULL THEN int8multirange(int8range(d.lo, d.hi)) ELSE d.many::int8multirange END, $7, $8
FROM unnest($1::text[], $2::text[], $3::int4[], $4::int8[], $5::int8[], $6::text[]) AS d(sink, topic, partition, lo, hi, many)`

// insert adds merged (one entry per destination, in destination order, as
// durable.MergeRanges returns) to schema's coverage table. A destination
// without ranges is skipped. It checks that the statement added one row
// per destination: a nil error alone is not taken as the ranges being
// there. It returns the destinations it wrote, as columns.
func insert(ctx context.Context, db execer, schema, writer string, at time.Time, merged []coverage.DestinationRanges) (dests, error) {
	var (
		d      dests
		lo, hi []int64
		many   []*string
		buf    []byte
	)
	for _, dr := range merged {
		if len(dr.Ranges) == 0 {
			continue
		}
		d.add(dr.Destination)
		// Validated: End <= MaxBatchEnd, so both bounds fit an int8.
		if len(dr.Ranges) == 1 {
			lo, hi, many = append(lo, int64(dr.Ranges[0].Start)), append(hi, int64(dr.Ranges[0].End)), append(many, nil)
			continue
		}
		buf = append(buf[:0], '{')
		for i, r := range dr.Ranges {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(buf, '[')
			buf = strconv.AppendUint(buf, r.Start, 10)
			buf = append(buf, ',')
			buf = strconv.AppendUint(buf, r.End, 10)
			buf = append(buf, ')')
		}
		lit := string(append(buf, '}'))
		lo, hi, many = append(lo, 0), append(hi, 0), append(many, &lit)
	}
	if len(lo) == 0 {
		return d, nil
	}
	sql := fmt.Sprintf(insertSQL, pgx.Identifier{schema, "coverage"}.Sanitize())
	tag, err := db.Exec(ctx, sql, d.sinks, d.topics, d.parts, lo, hi, many, writer, at)
	if err != nil {
		return d, fmt.Errorf("insert %d destinations: %w", len(lo), err)
	}
	if tag.RowsAffected() != int64(len(lo)) {
		return d, fmt.Errorf("insert %d destinations added %d rows (%s): the coverage may not hold them", len(lo), tag.RowsAffected(), tag)
	}
	return d, nil
}

// dests are destinations as the three arrays a statement takes.
type dests struct {
	sinks, topics []string
	parts         []int32
}

func (d *dests) add(dest coverage.Destination) {
	d.sinks = append(d.sinks, dest.Sink)
	d.topics = append(d.topics, dest.Topic)
	d.parts = append(d.parts, dest.Partition)
}

// validateRanges refuses what Record would refuse (a NUL in a topic name,
// which PostgreSQL text cannot hold, among it) before anything is written.
func validateRanges(ranges []coverage.DestinationRanges) error {
	for _, dr := range ranges {
		for _, r := range dr.Ranges {
			if err := coverage.ValidateRecord(dr.Destination, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// RecordInTx adds ranges to the coverage table of schema inside the
// caller's transaction tx, as writer: the exactly-once path for a
// relational sink, whose rows and their coverage then commit or roll back
// together. It writes no checkpoint name (the transaction is the unit) and
// does not commit. The tables must exist (Open creates them).
//
// It adds a row per destination, and folds a destination that has more
// than FoldRowsInTx rows within the same transaction, holding the row
// locks of the rows it merged until the transaction ends; folds pass over
// rows another transaction holds (SKIP LOCKED), so they neither wait for
// nor deadlock with one another. Under REPEATABLE READ or SERIALIZABLE, a
// fold meeting rows a concurrent one changed can fail with a
// serialization failure (SQLSTATE 40001): the caller retries its whole
// transaction; nothing committed is lost.
func RecordInTx(ctx context.Context, tx pgx.Tx, schema, writer string, ranges []coverage.DestinationRanges) error {
	if err := ValidateSchema(schema); err != nil {
		return err
	}
	return recordInTx(ctx, tx, schema, writer, time.Now(), ranges)
}

// RecordInTx is RecordInTx on the tier's schema, stamped by its clock.
func (t *Tier) RecordInTx(ctx context.Context, tx pgx.Tx, writer string, ranges []coverage.DestinationRanges) error {
	return recordInTx(ctx, tx, t.opts.Schema, writer, t.opts.Now(), ranges)
}

func recordInTx(ctx context.Context, tx pgx.Tx, schema, writer string, at time.Time, ranges []coverage.DestinationRanges) error {
	if writer == "" || strings.IndexByte(writer, 0) >= 0 {
		return fmt.Errorf("postgres: record in transaction: %w: writer %q is empty or has a NUL byte", durable.ErrInvalidCheckpoint, writer)
	}
	if err := validateRanges(ranges); err != nil {
		return err
	}
	d, err := insert(ctx, tx, schema, writer, at, durable.MergeRanges(ranges))
	if err != nil {
		return fmt.Errorf("postgres: record in transaction of %q, schema %q: %w", writer, schema, err)
	}
	if _, err := fold(ctx, tx, schema, d, FoldRowsInTx); err != nil {
		return fmt.Errorf("postgres: record in transaction of %q, schema %q: %w", writer, schema, err)
	}
	return nil
}
