package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// filterSQL is the WHERE clause for f over $1..$5, given filterArgs(f):
// Partitions as two arrays of the same length, the i-th elements one
// partition's topic and number, joined against the rows (empty arrays
// restrict nothing).
const filterSQL = ` WHERE ($1 = '' OR sink = $1) AND ($2 = '' OR topic = $2) AND ($3::int4 IS NULL OR partition = $3)` +
	` AND (cardinality($4::text[]) = 0 OR (topic, partition) IN (SELECT * FROM unnest($4::text[], $5::int4[])))`

// filterArgs are filterSQL's parameters for f.
func filterArgs(f durable.Filter) []any {
	topics, parts := make([]string, 0, len(f.Partitions)), make([]int32, 0, len(f.Partitions))
	for _, tp := range f.Partitions {
		if strings.IndexByte(tp.Topic, 0) < 0 { // see noMatch
			topics, parts = append(topics, tp.Topic), append(parts, tp.Partition)
		}
	}
	return []any{f.Sink, f.Topic, f.Partition, topics, parts}
}

// noMatch: a filter naming a NUL selects nothing (no stored name has one),
// and PostgreSQL would refuse it as a parameter; so does a filter whose
// every partition names one.
func noMatch(f durable.Filter) bool {
	if strings.IndexByte(f.Sink, 0) >= 0 || strings.IndexByte(f.Topic, 0) >= 0 {
		return true
	}
	for _, tp := range f.Partitions {
		if strings.IndexByte(tp.Topic, 0) < 0 {
			return false
		}
	}
	return len(f.Partitions) > 0
}

// Coverage returns the coverage of every destination f selects, filtered
// by the server: the union of the coverage rows and of the deltas layout
// (its bases and the deltas not yet folded), whatever Options.Layout
// says.
func (t *Tier) Coverage(ctx context.Context, f durable.Filter) (map[coverage.Destination]*coverage.RangeSet, error) {
	out := map[coverage.Destination]*coverage.RangeSet{}
	if noMatch(f) {
		return out, nil
	}
	// Each row as it is; the union of a destination's rows is taken here,
	// where sorting a few rows' ranges costs less than range_agg on the
	// server, which sorts every range of the destination again.
	var byDest map[coverage.Destination][][]coverage.Range
	err := t.read(ctx, func(tx pgx.Tx) error {
		byDest = map[coverage.Destination][][]coverage.Range{}
		rows, err := tx.Query(ctx, "SELECT sink, topic, partition, b.lo, b.hi FROM "+t.coverage+coverageBounds+filterSQL, filterArgs(f)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d coverage.Destination
			var lo, hi []pgtype.Int8
			if err := rows.Scan(&d.Sink, &d.Topic, &d.Partition, &lo, &hi); err != nil {
				return err
			}
			rs, err := storedRanges(lo, hi)
			if err != nil {
				return fmt.Errorf("%s: %w", d, err)
			}
			byDest[d] = append(byDest[d], rs)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: coverage %+v of %s: %w", f, t.name, err)
	}
	for d, parts := range byDest {
		rs := parts[0]
		if len(parts) > 1 {
			rs = coverage.Normalize(slices.Concat(parts...))
		}
		set, err := coverage.NewRangeSet(rs...)
		if err != nil {
			return nil, fmt.Errorf("postgres: coverage of %s on %s: %w: %w", d, t.name, coverage.ErrCorrupt, err)
		}
		out[d] = &set
	}
	// The deltas layout's, read after the rows: nothing moves from one
	// layout to the other, so the union of the two reads is a lag at
	// most.
	if err := t.deltaCoverage(ctx, f, out); err != nil {
		return nil, err
	}
	return out, nil
}

// coverageBounds reads each row's multirange as two arrays of bounds, from
// one aggregate over its ranges, so the i-th elements are one range's.
// PostgreSQL's binary output of a multirange (multirange_send) costs about
// 2.5 s per million ranges on the server; the arrays, a fifth of that.
const coverageBounds = " CROSS JOIN LATERAL (SELECT array_agg(lower(r)) AS lo, array_agg(upper(r)) AS hi FROM unnest(covered) AS r) AS b"

// storedRanges converts a stored multirange's bounds (lo[i], hi[i]), which
// PostgreSQL keeps ascending and disjoint. int8range is discrete, so every
// bounded range reads back as [lower,upper); only non-negative bounds are
// ever written, and an unbounded side reads as NULL. Anything else is
// refused as corrupt rather than read as coverage.
func storedRanges(lo, hi []pgtype.Int8) ([]coverage.Range, error) {
	if len(lo) != len(hi) {
		return nil, fmt.Errorf("%w: %d lower bounds and %d upper bounds", coverage.ErrCorrupt, len(lo), len(hi))
	}
	rs := make([]coverage.Range, len(lo))
	for i := range lo {
		l, u := lo[i], hi[i]
		if !l.Valid || !u.Valid || l.Int64 < 0 || u.Int64 <= l.Int64 {
			return nil, fmt.Errorf("%w: stored range %d (lower %+v, upper %+v) is not a bounded [start,end) of batch ids", coverage.ErrCorrupt, i, l, u)
		}
		rs[i] = coverage.Range{Start: uint64(l.Int64), End: uint64(u.Int64)}
	}
	if !coverage.IsNormalized(rs) {
		return nil, fmt.Errorf("%w: a stored multirange's ranges are not ascending and disjoint", coverage.ErrCorrupt)
	}
	return rs, nil
}

// LastWrites returns, for every destination f selects, its last write:
// how far behind each destination's writers are.
func (t *Tier) LastWrites(ctx context.Context, f durable.Filter) (map[coverage.Destination]durable.LastWrite, error) {
	out := map[coverage.Destination]durable.LastWrite{}
	if noMatch(f) {
		return out, nil
	}
	err := t.read(ctx, func(tx pgx.Tx) error {
		clear(out)
		rows, err := tx.Query(ctx, "SELECT DISTINCT ON (sink, topic, partition) sink, topic, partition, last_writer, last_write FROM "+
			t.coverage+filterSQL+" ORDER BY sink, topic, partition, last_write DESC, last_writer", filterArgs(f)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var d coverage.Destination
			var lw durable.LastWrite
			if err := rows.Scan(&d.Sink, &d.Topic, &d.Partition, &lw.Writer, &lw.At); err != nil {
				return err
			}
			out[d] = lw
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: last writes %+v of %s: %w", f, t.name, err)
	}
	if err := t.deltaLastWrites(ctx, f, out); err != nil {
		return nil, err
	}
	return out, nil
}

// read runs fn in a transaction that is rolled back, begun as every
// transaction is (so a pooled connection the server has ended is passed
// over, not returned as a failed read), and run again where PostgreSQL
// aborted it as a serialization failure. A read has no effect to repeat.
func (t *Tier) read(ctx context.Context, fn func(pgx.Tx) error) error {
	return t.inTx(ctx, func(tx pgx.Tx) (bool, error) { return false, fn(tx) })
}

// TopicSinks returns, for each of topics with rows (every topic, for none
// given), the sinks with rows of it, without their coverage: what a plan of
// a few partitions needs to know of the rest of their topics
// (recovery.SinkLister).
func (t *Tier) TopicSinks(ctx context.Context, topics []string) (map[string][]string, error) {
	out := map[string][]string{}
	want := make([]string, 0, len(topics))
	for _, topic := range topics {
		if strings.IndexByte(topic, 0) < 0 { // see noMatch
			want = append(want, topic)
		}
	}
	if len(topics) > 0 && len(want) == 0 {
		return out, nil
	}
	err := t.read(ctx, func(tx pgx.Tx) error {
		clear(out)
		rows, err := tx.Query(ctx, "SELECT DISTINCT topic, sink FROM "+t.coverage+" WHERE cardinality($1::text[]) = 0 OR topic = ANY($1)", want)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var topic, sink string
			if err := rows.Scan(&topic, &sink); err != nil {
				return err
			}
			out[topic] = append(out[topic], sink)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: the sinks of topics %q of %s: %w", topics, t.name, err)
	}
	if err := t.deltaTopicSinks(ctx, want, out); err != nil {
		return nil, err
	}
	return out, nil
}
