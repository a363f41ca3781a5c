package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// shipNowTimeout bounds the shipping RecordStates tries at once: the
// states are durable locally by then, and a durable tier that does not
// answer must not hold the caller; the next checkpoint ships them.
const shipNowTimeout = 5 * time.Second

// RecordStates records gap states (package gapstate): into the local tier,
// synced, then appended to the durable tier at once if it answers within
// a few seconds, else by the next checkpoint. nil means durable in the
// local tier. It never records coverage. A durable tier that keeps no
// states fails it with durable.ErrNoStates before anything is written:
// they could never be shipped.
func (m *Mirror) RecordStates(ctx context.Context, events []gapstate.Event) error {
	if _, err := durable.StatesOf(m.opts.Durable); err != nil {
		return err
	}
	if err := m.opts.Local.RecordStates(ctx, events); err != nil {
		return fmt.Errorf("mirror: recording %d gap states: %w", len(events), err)
	}
	sctx, cancel := context.WithTimeout(ctx, shipNowTimeout)
	defer cancel()
	if _, err := m.shipStates(sctx); err != nil {
		m.opts.Logger.Warn("gap states recorded locally; appending them to the durable tier failed, the next checkpoint retries",
			"durable", m.opts.Durable.Name(), "count", len(events), "err", err)
	}
	return nil
}

// shipStates appends the local tier's pending gap states to the durable
// tier and marks them shipped only once the append returned nil and a read
// of the durable tier shows every one of them: the local tier is never the
// only copy of a state it no longer ships. It returns how many it marked.
// Two shippers at once are harmless (the durable tier keeps one event per
// ID), but wasteful: they take turns.
func (m *Mirror) shipStates(ctx context.Context) (int, error) {
	select {
	case m.statesTurn <- struct{}{}:
	case <-ctx.Done():
		return 0, fmt.Errorf("waiting for the gap states being shipped: %w", ctx.Err())
	}
	defer func() { <-m.statesTurn }()
	pending := m.opts.Local.PendingStates()
	if len(pending) == 0 {
		return 0, nil
	}
	store, err := durable.StatesOf(m.opts.Durable)
	if err != nil {
		return 0, err
	}
	if err := store.AppendStates(ctx, pending); err != nil {
		return 0, fmt.Errorf("appending %d gap states to %q: %w; they stay pending", len(pending), m.opts.Durable.Name(), err)
	}
	var parts []coverage.TopicPartition
	for _, e := range pending {
		if tp := e.Destination.TopicPartition(); !slices.Contains(parts, tp) {
			parts = append(parts, tp)
		}
	}
	held, err := store.States(ctx, durable.Filter{Partitions: parts})
	if err != nil {
		return 0, fmt.Errorf("reading back %d gap states appended to %q: %w; they stay pending", len(pending), m.opts.Durable.Name(), err)
	}
	ids := make(map[string]bool, len(held))
	for _, e := range held {
		ids[e.ID] = true
	}
	var missing []string
	for _, e := range pending {
		if !ids[e.ID] {
			missing = append(missing, e.ID)
		}
	}
	if len(missing) > 0 {
		return 0, fmt.Errorf("%q does not show %d of the %d gap states it accepted (first %q): they stay pending", m.opts.Durable.Name(), len(missing), len(pending), missing[0])
	}
	if err := m.opts.Local.MarkStatesShipped(ctx, pending); err != nil {
		return 0, errors.Join(fmt.Errorf("the durable tier holds %d gap states; marking them shipped failed, they are appended again", len(pending)), err)
	}
	return len(pending), nil
}
