package mirror

import (
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/memstates"
	"github.com/covmirror/covmirror/local"
)

// TestStatesShipOnlyTheCopyReadBack: the durable tier already holds an
// event of an ID (another pod's, or a caller reusing the ID) and keeps
// that copy (as PostgreSQL's ON CONFLICT DO NOTHING does) when this pod
// appends a copy of the same ID that differs. The read-back shows the ID,
// not this pod's copy: it stays pending (listed, logged), while another
// state of the same batch is shipped.
func TestStatesShipOnlyTheCopyReadBack(t *testing.T) {
	e := newEnv(t)
	store := memstates.New()
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
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	theirs := gapstate.Event{ID: "x1", Destination: d, Range: rg(5, 9), State: gapstate.Refused, Reason: "400", By: "pod-b", At: t0.Add(time.Minute)}
	if err := store.AppendStates(ctx, []gapstate.Event{theirs}); err != nil {
		t.Fatal(err)
	}
	mine := gapstate.Event{ID: "x1", Destination: d, Range: rg(0, 20), State: gapstate.Reopened, Reason: "fixed", By: "pod-a", At: t0}
	other := gapstate.Event{ID: "y1", Destination: d, Range: rg(30, 40), State: gapstate.Unrecoverable, Reason: "expired", By: "pod-a", At: t0}
	store.SetDown(true)
	if err := m.RecordStates(ctx, []gapstate.Event{mine, other}); err != nil {
		t.Fatal(err)
	}
	store.SetDown(false)
	// The checkpoint does not fail for it: nothing this pod does ships it,
	// and the coverage checkpoints must go on.
	sum, err := m.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pending := l.PendingStates()
	if len(pending) != 1 || pending[0].ID != mine.ID || pending[0].State != gapstate.Reopened {
		t.Fatalf("pending after the checkpoint: %+v; want only %q (the durable tier holds another copy of it)", pending, mine.ID)
	}
	if sum.States != 1 {
		t.Errorf("summary %+v: want 1 state shipped (%q)", sum, other.ID)
	}
	if len(store.Events()) != 2 {
		t.Errorf("%d events held, want 2", len(store.Events()))
	}
}
