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

// errOtherCopy: the durable tier holds another event of a pending state's
// ID (another pod's, or a caller's reused ID) and will never take this
// one; it stays pending, and findable, without failing every checkpoint.
var errOtherCopy = errors.New("another event of the same ID")

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
	copies := make(map[string][]gapstate.Event, len(held))
	for _, e := range held {
		copies[e.ID] = append(copies[e.ID], e)
	}
	// The copy itself must be there, not just its ID: a tier that keeps
	// the first copy of an ID it was sent (PostgreSQL) holds another
	// pod's, or a reused ID's, event instead of this one.
	var shipped []gapstate.Event
	var missing, other []string
	for _, e := range pending {
		switch {
		case slices.ContainsFunc(copies[e.ID], func(h gapstate.Event) bool { return gapstate.SameCopy(&h, &e) }):
			shipped = append(shipped, e)
		case len(copies[e.ID]) > 0:
			other = append(other, e.ID)
		default:
			missing = append(missing, e.ID)
		}
	}
	var short error
	switch {
	case len(missing) > 0:
		short = fmt.Errorf("%q does not show %d of the %d gap states it accepted (first %q): they stay pending", m.opts.Durable.Name(), len(missing), len(pending), missing[0])
	case len(other) > 0:
		short = fmt.Errorf("%w: %q holds another event of the ID of %d of the %d gap states appended (first %q), and keeps it: they stay pending, listed by inspect", errOtherCopy, m.opts.Durable.Name(), len(other), len(pending), other[0])
	}
	if len(shipped) == 0 {
		return 0, short
	}
	if err := m.opts.Local.MarkStatesShipped(ctx, shipped); err != nil {
		return 0, errors.Join(short, fmt.Errorf("the durable tier holds %d gap states; marking them shipped failed, they are appended again", len(shipped)), err)
	}
	return len(shipped), short
}
