package mirror

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/memstates"
	"github.com/covmirror/covmirror/local"
)

// forgetful is a StateStore that answers nil to appends and keeps nothing
// while forget is set: an answer the durable tier does not stand by.
type forgetful struct {
	*memstates.Store
	forget bool
}

func (f *forgetful) AppendStates(ctx context.Context, events []gapstate.Event) error {
	if f.forget {
		return durable.ValidateStates(events)
	}
	return f.Store.AppendStates(ctx, events)
}

// TestStatesShipOnlyOnceReadBack: a state recorded while the durable tier
// is down is kept by the local tier (RecordStates returns nil) and pending;
// a checkpoint whose append the tier answers nil but whose read-back lacks
// the state leaves it pending and fails; once the tier keeps it, the
// checkpoint ships it, once, and no state is coverage.
func TestStatesShipOnlyOnceReadBack(t *testing.T) {
	e := newEnv(t)
	store := &forgetful{Store: memstates.New()}
	tier := memstates.With(e.table, store)
	l, err := local.Open(local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Local: l, Durable: tier, Writer: "pod-a", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	d := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 0}
	ev := gapstate.Event{ID: gapstate.NewID(), Destination: d, Range: rg(5, 9), State: gapstate.Refused, Reason: "400", By: "pod-a", At: time.Now().UTC()}

	store.SetDown(true)
	if err := m.RecordStates(ctx, []gapstate.Event{ev}); err != nil {
		t.Fatalf("RecordStates while the durable tier is down: %v, want nil (kept locally)", err)
	}
	if n := len(store.Events()); n != 0 || len(l.PendingStates()) != 1 {
		t.Fatalf("while down: %d events in the durable tier, %d pending locally; want 0 and 1", n, len(l.PendingStates()))
	}
	if _, err := m.Checkpoint(ctx); !errors.Is(err, memstates.ErrDown) {
		t.Fatalf("a checkpoint while down: %v, want the states' append failure", err)
	}
	store.SetDown(false)
	store.forget = true
	if _, err := m.Checkpoint(ctx); err == nil || len(l.PendingStates()) != 1 {
		t.Fatalf("a checkpoint whose append was answered nil and not kept: %v, %d pending; want an error and the state pending", err, len(l.PendingStates()))
	}
	store.forget = false
	sum, err := m.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.States != 1 || len(l.PendingStates()) != 0 || len(store.Events()) != 1 {
		t.Fatalf("after the tier healed: summary %+v, %d pending, %d held; want 1 shipped, 0, 1", sum, len(l.PendingStates()), len(store.Events()))
	}
	if sum, err := m.Checkpoint(ctx); err != nil || sum.States != 0 {
		t.Fatalf("a checkpoint with nothing pending: %+v, %v; want no state shipped again", sum, err)
	}
	if cov, err := e.table.Coverage(ctx, durable.Filter{}); err != nil || len(cov) != 0 {
		t.Fatalf("the durable coverage %v (%v), want none: a state is never coverage", cov, err)
	}
	if dests, _ := l.Destinations(ctx); len(dests) != 0 {
		t.Fatalf("the local destinations %v, want none: a state is never coverage", dests)
	}
}
