package durable

import (
	"context"
	"fmt"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
)

// Decide records an operator's decision e in store, stamped after every
// recorded decision it overrides: the latest decision per batch holds
// (gapstate.Resolve), so a reopen or waiver stamped by a clock behind the
// one that recorded the refusal it answers would otherwise do nothing. It
// reads the events of e's partition, and e.At becomes at least one
// microsecond after the latest overlapping one of e's destination or of
// reference's destination of the same partition. It returns e as
// recorded. An error of AppendStates means maybe recorded: Decide again is
// a second decision of the same meaning.
func Decide(ctx context.Context, store StateStore, reference string, e gapstate.Event) (gapstate.Event, error) {
	events, err := store.States(ctx, Filter{Partitions: []coverage.TopicPartition{e.Destination.TopicPartition()}})
	if err != nil {
		return e, fmt.Errorf("durable: reading the decisions %s overrides: %w", e.Destination, err)
	}
	ref := e.Destination.WithSink(reference)
	for _, o := range events {
		overlaps := o.Range.Start < e.Range.End && e.Range.Start < o.Range.End
		if overlaps && (o.Destination == e.Destination || o.Destination == ref) && !o.At.Before(e.At) {
			e.At = o.At.Add(time.Microsecond)
		}
	}
	if err := store.AppendStates(ctx, []gapstate.Event{e}); err != nil {
		return e, err
	}
	return e, nil
}
