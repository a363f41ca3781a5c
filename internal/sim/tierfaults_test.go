package sim

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/object"
)

// TestFaultTierKeepsStates: the fault seam passes gap states through to a
// real tier under Append's faults: refused before the tier (nothing
// written), applied with the answer lost (written; the retry adds no
// copy), and a failed read; and says ErrNoStates over a tier without them.
func TestFaultTierKeepsStates(t *testing.T) {
	ctx := context.Background()
	blobs, err := object.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	inner, err := object.Open(ctx, object.Options{Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	f := newFaults(1, Rates{TierAppend: 1})
	f.set(true)
	ft := &faultTier{Tier: inner, f: f}
	e := gapstate.Event{ID: gapstate.NewID(), Destination: coverage.Destination{Sink: "lake", Topic: "t"}, Range: coverage.Range{Start: 1, End: 5},
		State: gapstate.Refused, Reason: "400", By: "pod-a", At: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	count := func() int {
		got, err := inner.States(ctx, durable.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	if err := ft.AppendStates(ctx, []gapstate.Event{e}); !errors.Is(err, errTierDown) || count() != 0 {
		t.Fatalf("refused: %v, %d events written; want errTierDown, none", err, count())
	}
	f.rates = Rates{TierAppendLost: 1, TierRead: 1}
	for range 2 {
		if err := ft.AppendStates(ctx, []gapstate.Event{e}); !errors.Is(err, errTierDown) || count() != 1 {
			t.Fatalf("answer lost: %v, %d events; want errTierDown, one", err, count())
		}
	}
	if _, err := ft.States(ctx, durable.Filter{}); !errors.Is(err, errTierDown) {
		t.Fatalf("read fault: %v", err)
	}
	f.set(false)
	if got, err := ft.States(ctx, durable.Filter{}); err != nil || len(got) != 1 || got[0].ID != e.ID {
		t.Fatalf("without faults: %v, %v", got, err)
	}
	bare := &faultTier{Tier: struct{ durable.Tier }{inner}, f: f}
	if err := bare.AppendStates(ctx, []gapstate.Event{e}); !errors.Is(err, durable.ErrNoStates) {
		t.Fatalf("over a tier without states: %v, want ErrNoStates", err)
	}
}
