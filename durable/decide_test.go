package durable_test

import (
	"context"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// memStates keeps events in memory, one per ID.
type memStates struct{ events []gapstate.Event }

func (m *memStates) AppendStates(_ context.Context, events []gapstate.Event) error {
	if err := durable.ValidateStates(events); err != nil {
		return err
	}
	m.events = append(m.events, events...)
	return nil
}

func (m *memStates) States(_ context.Context, f durable.Filter) ([]gapstate.Event, error) {
	var out []gapstate.Event
	for _, e := range m.events {
		if f.Match(e.Destination) {
			out = append(out, e)
		}
	}
	return out, nil
}

// TestDecideAfterASkewedRefusal: a pod whose clock runs ten minutes ahead
// refused a range; an operator's reopen five minutes later (by the real
// clock) must still hold, and so must a reopen of raw's loss, whatever the
// clocks say. A decision about other batches is not waited for.
func TestDecideAfterASkewedRefusal(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	lake := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 0}
	store := &memStates{}
	ahead := []gapstate.Event{
		{ID: "a", Destination: lake, Range: coverage.Range{Start: 0, End: 10}, State: gapstate.Refused, Reason: "400", By: "pod-fast", At: now.Add(10 * time.Minute)},
		{ID: "b", Destination: lake.WithSink("raw"), Range: coverage.Range{Start: 8, End: 12}, State: gapstate.Unrecoverable, Reason: "expired", By: "retention", At: now.Add(20 * time.Minute)},
		{ID: "c", Destination: lake, Range: coverage.Range{Start: 50, End: 60}, State: gapstate.Refused, Reason: "400", By: "pod-fast", At: now.Add(time.Hour)},
	}
	if err := store.AppendStates(context.Background(), ahead); err != nil {
		t.Fatal(err)
	}
	e, err := gapstate.NewDecision(lake, coverage.Range{Start: 0, End: 12}, gapstate.Reopened, "schema fixed", "ops", now.Add(5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	got, err := durable.Decide(context.Background(), store, "raw", e)
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(20*time.Minute + time.Microsecond); !got.At.Equal(want) {
		t.Fatalf("the reopen is stamped %s, want %s: just after the latest decision it overrides, not the unrelated one", got.At, want)
	}
	if spans := gapstate.Resolve(lake, "raw", store.events, nil); len(spans) != 1 || spans[0].Range != (coverage.Range{Start: 50, End: 60}) {
		t.Fatalf("after the reopen lake's states are %+v, want only the unrelated refusal [50,60)", spans)
	}
}
