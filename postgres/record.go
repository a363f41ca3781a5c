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

// execer is what an upsert needs: a pool, a connection or a transaction.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// upsertSQL merges, in one statement, each destination's ranges into its
// row: the ranges travel as one multirange literal per destination
// ('{[lo,hi),...}', parsed and normalized by the server), since pgx has no
// codec for an array of multiranges; parsing them costs far less than
// aggregating flat arrays with range_agg, which at 100,000 destinations
// spilled to disk. Rows go in destination order (the ORDINALITY of merged
// input), so that concurrent writers lock shared rows in one order and do
// not deadlock. covered only grows: + is the union.
const upsertSQL = `
INSERT INTO %s AS c (sink, topic, partition, covered, last_writer, last_write)
SELECT d.sink, d.topic, d.partition, d.covered::int8multirange, $5, $6
FROM unnest($1::text[], $2::text[], $3::int4[], $4::text[]) WITH ORDINALITY AS d(sink, topic, partition, covered, i)
ORDER BY d.i
ON CONFLICT (sink, topic, partition) DO UPDATE
SET covered = c.covered + EXCLUDED.covered,
    last_writer = EXCLUDED.last_writer,
    last_write = EXCLUDED.last_write`

// upsert merges merged (one entry per destination, in destination order,
// as durable.MergeRanges returns) into schema's coverage table. A
// destination without ranges is skipped. It checks that the statement
// touched one row per destination: a nil error alone is not taken as the
// ranges being there.
func upsert(ctx context.Context, db execer, schema, writer string, at time.Time, merged []coverage.DestinationRanges) error {
	var (
		sinks, topics, covered []string
		parts                  []int32
		buf                    []byte
	)
	for _, dr := range merged {
		if len(dr.Ranges) == 0 {
			continue
		}
		sinks = append(sinks, dr.Destination.Sink)
		topics = append(topics, dr.Destination.Topic)
		parts = append(parts, dr.Destination.Partition)
		buf = append(buf[:0], '{')
		for i, r := range dr.Ranges {
			if i > 0 {
				buf = append(buf, ',')
			}
			// Validated: End <= MaxBatchEnd, so both fit an int8.
			buf = append(buf, '[')
			buf = strconv.AppendUint(buf, r.Start, 10)
			buf = append(buf, ',')
			buf = strconv.AppendUint(buf, r.End, 10)
			buf = append(buf, ')')
		}
		covered = append(covered, string(append(buf, '}')))
	}
	if len(sinks) == 0 {
		return nil
	}
	sql := fmt.Sprintf(upsertSQL, pgx.Identifier{schema, "coverage"}.Sanitize())
	tag, err := db.Exec(ctx, sql, sinks, topics, parts, covered, writer, at)
	if err != nil {
		return fmt.Errorf("upsert %d destinations: %w", len(sinks), err)
	}
	if tag.RowsAffected() != int64(len(sinks)) {
		return fmt.Errorf("upsert %d destinations touched %d rows (%s): the coverage may not hold them", len(sinks), tag.RowsAffected(), tag)
	}
	return nil
}

// validateRanges refuses what Record would refuse, and what PostgreSQL
// text cannot hold, before anything is written.
func validateRanges(ranges []coverage.DestinationRanges) error {
	for _, dr := range ranges {
		for _, r := range dr.Ranges {
			if err := coverage.ValidateRecord(dr.Destination, r); err != nil {
				return err
			}
		}
	}
	return refuseNUL(ranges)
}

// refuseNUL refuses a topic name with a NUL, which coverage allows and
// PostgreSQL text cannot hold. (A sink name with one is a control
// character, which Validate refuses already.)
func refuseNUL(ranges []coverage.DestinationRanges) error {
	for _, dr := range ranges {
		if strings.IndexByte(dr.Destination.Topic, 0) >= 0 {
			return coverage.NewError("record", dr.Destination, coverage.Range{},
				fmt.Errorf("%w: topic name %q has a NUL byte, which PostgreSQL text cannot hold", coverage.ErrInvalidDestination, dr.Destination.Topic))
		}
	}
	return nil
}

// RecordInTx merges ranges into the coverage table of schema inside the
// caller's transaction tx, as writer: the exactly-once path for a
// relational sink, whose rows and their coverage then commit or roll back
// together. It writes no checkpoint name (the transaction is the unit) and
// does not commit. The tables must exist (Open creates them).
//
// Under REPEATABLE READ or SERIALIZABLE, a concurrent writer of the same
// destination makes it fail with a serialization failure (SQLSTATE
// 40001); the caller retries its whole transaction. Under READ COMMITTED
// (PostgreSQL's default) the row lock orders the writers and the union
// holds both.
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
	if err := upsert(ctx, tx, schema, writer, at, durable.MergeRanges(ranges)); err != nil {
		return fmt.Errorf("postgres: record in transaction of %q, schema %q: %w", writer, schema, err)
	}
	return nil
}
