package queries

import (
	"context"
	"database/sql/driver"
	"fmt"
	"math"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// statesDDL creates the gap_states relation (package gapstate) with the
// columns of the Iceberg gap_states table: the gaps, summary and waivers
// queries read it; nothing reads it as coverage. Empty until BindStates.
const statesDDL = `CREATE TABLE gap_states (event_id VARCHAR, sink VARCHAR, topic VARCHAR, "partition" INTEGER,
	range_start BIGINT, range_end BIGINT, state VARCHAR, reason VARCHAR, decided_by VARCHAR, decided_at TIMESTAMPTZ)`

// BindStates makes the gap_states relation hold events, in place of what
// it held: the queries read each event_id once, whatever copies events
// holds. An event no tier may hold (gapstate.Event.Validate) binds nothing.
func (q *DB) BindStates(ctx context.Context, events []gapstate.Event) error {
	if err := durable.ValidateStates(events); err != nil {
		return fmt.Errorf("queries: binding the gap states: %w", err)
	}
	if _, err := q.conn.ExecContext(ctx, `DELETE FROM gap_states`); err != nil {
		return fmt.Errorf("queries: binding the gap states: %w", err)
	}
	err := q.appendTo(ctx, "gap_states", func(add func(...driver.Value) error) error {
		for _, e := range events {
			if e.Range.End > math.MaxInt64 {
				return fmt.Errorf("event %q holds [%d,%d), past the relation's BIGINT columns", e.ID, e.Range.Start, e.Range.End)
			}
			if err := add(e.ID, e.Sink, e.Topic, e.Partition, int64(e.Range.Start), int64(e.Range.End), string(e.State), e.Reason, e.By, e.At.UTC()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("queries: binding the gap states: %w", err)
	}
	return nil
}

// bindStatesOf binds the gap states of t, if it keeps any
// (durable.StateStore); a tier that keeps none leaves the relation empty.
func (q *DB) bindStatesOf(ctx context.Context, t any) error {
	store, ok := t.(durable.StateStore)
	if !ok {
		return nil
	}
	events, err := store.States(ctx, durable.Filter{})
	if err != nil {
		return fmt.Errorf("queries: reading the gap states: %w", err)
	}
	return q.BindStates(ctx, events)
}
