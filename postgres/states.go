package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

var _ durable.StateStore = (*Tier)(nil)

// insertStatesSQL adds the events not there yet, keyed by their ID, and
// counts how many of the call's IDs the table holds once it ran: the ones
// it inserted and the ones there before (the statement's snapshot). A
// retried call inserts nothing and counts every ID; so a nil error with
// every ID counted is the events being there, not just no error. One
// statement, so it commits whole or not at all.
const insertStatesSQL = `
WITH ins AS (
	INSERT INTO %[1]s (id, sink, topic, partition, range_start, range_end, state, reason, decided_by, decided_at)
	SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int4[], $5::int8[], $6::int8[], $7::text[], $8::text[], $9::text[], $10::timestamptz[])
	ON CONFLICT (id) DO NOTHING
	RETURNING id)
SELECT count(*) FROM (SELECT id FROM ins UNION SELECT id FROM %[1]s WHERE id = ANY($1::text[])) AS held`

// AppendStates inserts the events into the gap_states table, each once:
// INSERT ... ON CONFLICT (id) DO NOTHING, so a retry after an answer that
// was lost adds nothing, and two writers' events are kept side by side (a
// union; a row is never updated). The events are validated first; one
// bad event writes nothing. It returns nil once the statement committed
// and the table holds every ID of the call.
func (t *Tier) AppendStates(ctx context.Context, events []gapstate.Event) error {
	if err := durable.ValidateStates(events); err != nil {
		return fmt.Errorf("postgres: append gap states to %s: %w", t.name, err)
	}
	var cols struct {
		ids, sinks, topics, states, reasons, by []string
		parts                                   []int32
		starts, ends                            []int64
		at                                      []time.Time
	}
	seen := make(map[string]bool, len(events))
	for _, e := range events {
		if seen[e.ID] {
			continue // one row per ID; the writer's duplicate
		}
		seen[e.ID] = true
		cols.ids, cols.sinks, cols.topics = append(cols.ids, e.ID), append(cols.sinks, e.Sink), append(cols.topics, e.Topic)
		cols.parts = append(cols.parts, e.Partition)
		// Validated: End <= coverage.MaxBatchEnd, so both bounds fit an int8.
		cols.starts, cols.ends = append(cols.starts, int64(e.Start)), append(cols.ends, int64(e.End))
		cols.states, cols.reasons, cols.by = append(cols.states, string(e.State)), append(cols.reasons, e.Reason), append(cols.by, e.By)
		// Truncated here, not rounded by the server: every tier keeps the
		// same microsecond.
		cols.at = append(cols.at, e.At.UTC().Truncate(time.Microsecond))
	}
	if len(cols.ids) == 0 {
		return nil
	}
	sql := fmt.Sprintf(insertStatesSQL, t.states)
	for attempt := 1; ; attempt++ {
		var held int
		err := t.retryConn(ctx, func() error {
			return t.pool.QueryRow(ctx, sql, cols.ids, cols.sinks, cols.topics, cols.parts, cols.starts, cols.ends,
				cols.states, cols.reasons, cols.by, cols.at).Scan(&held)
		})
		if err == nil && held == len(cols.ids) {
			return nil
		}
		if err == nil {
			// An ID another transaction inserted after this statement's
			// snapshot: the insert waited for it, the count did not see
			// it. Running the statement again sees it.
			err = fmt.Errorf("%d of the %d events counted after the insert", held, len(cols.ids))
		} else if !retryable(err) {
			return fmt.Errorf("postgres: append %d gap states to %s (outcome unknown; append them again: a retry is harmless): %w", len(cols.ids), t.name, err)
		}
		if attempt >= t.opts.MaxAttempts {
			return fmt.Errorf("postgres: append %d gap states to %s: %d attempts (append them again: a retry is harmless): %w", len(cols.ids), t.name, attempt, err)
		}
		t.retries.Add(1)
		if serr := t.sleep(ctx, attempt); serr != nil {
			return fmt.Errorf("postgres: append %d gap states to %s: %w (after: %w)", len(cols.ids), t.name, serr, err)
		}
	}
}

// retryConn runs op again, as many times as the pool holds connections
// and once more, while it fails on a pooled connection the server has
// ended, as Blobs.retry does; op must be harmless to repeat.
func (t *Tier) retryConn(ctx context.Context, op func() error) error {
	for left := t.pool.Config().MaxConns; ; left-- {
		err := op()
		if err == nil || left <= 0 || ctx.Err() != nil || !connGone(err, true) {
			return err
		}
	}
}

// statesSQL reads the events f selects over filterArgs(f). Partitions
// are joined, not matched by filterSQL's IN under an OR, which the
// planner cannot turn into a join: so a read of a few partitions looks
// each up in the index by (topic, partition, sink), whatever the table's
// size.
func statesSQL(table string, f durable.Filter) string {
	const cols = "SELECT s.id, s.sink, s.topic, s.partition, s.range_start, s.range_end, s.state, s.reason, s.decided_by, s.decided_at FROM "
	if len(f.Partitions) == 0 {
		return cols + table + " AS s" + filterSQL
	}
	return cols + "(SELECT DISTINCT * FROM unnest($4::text[], $5::int4[])) AS p(topic, partition) JOIN " + table +
		" AS s ON s.topic = p.topic AND s.partition = p.partition" +
		" WHERE ($1 = '' OR s.sink = $1) AND ($2 = '' OR s.topic = $2) AND ($3::int4 IS NULL OR s.partition = $3)"
}

// States returns the events of the destinations f selects, filtered by
// the server (through the index by (topic, partition, sink) where f names
// a topic and partition, or partitions), one per ID (the table's key). A row no event
// can be (an unknown state, a negative or empty range, a missing reason)
// fails the read, naming it: it is never read as an event, nor left out.
func (t *Tier) States(ctx context.Context, f durable.Filter) ([]gapstate.Event, error) {
	out := []gapstate.Event{}
	if noMatch(f) {
		return out, nil
	}
	err := t.read(ctx, func(tx pgx.Tx) error {
		out = out[:0]
		rows, err := tx.Query(ctx, statesSQL(t.states, f), filterArgs(f)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e gapstate.Event
			var start, end int64
			var state string
			if err := rows.Scan(&e.ID, &e.Sink, &e.Topic, &e.Partition, &start, &end, &state, &e.Reason, &e.By, &e.At); err != nil {
				return err
			}
			if start < 0 || end < 0 {
				return fmt.Errorf("%w: gap state %q has range [%d,%d): not batch ids", coverage.ErrCorrupt, e.ID, start, end)
			}
			e.Range, e.State, e.At = coverage.Range{Start: uint64(start), End: uint64(end)}, gapstate.State(state), e.At.UTC()
			if err := e.Validate(); err != nil {
				return fmt.Errorf("%w: a row of gap_states is no event: %w", coverage.ErrCorrupt, err)
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: gap states %+v of %s: %w", f, t.name, err)
	}
	return out, nil
}
