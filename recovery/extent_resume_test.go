package recovery

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// memStore is a coverage.Store in memory, for Recover.
type memStore map[coverage.Destination]*coverage.RangeSet

func (m memStore) Record(_ context.Context, d coverage.Destination, r coverage.Range) error {
	if m[d] == nil {
		m[d] = new(coverage.RangeSet)
	}
	return m[d].Add(r)
}

func (m memStore) Covered(_ context.Context, d coverage.Destination) (coverage.RangeSet, error) {
	if m[d] == nil {
		return coverage.RangeSet{}, nil
	}
	return m[d].Clone(), nil
}

func (m memStore) Destinations(context.Context) ([]coverage.Destination, error) {
	return slices.SortedFunc(maps.Keys(m), coverage.Destination.Compare), nil
}

func (m memStore) Close() error { return nil }

// rawHolds is a replayer over a raw that durably holds held: Replay copies
// the task's batches raw holds (none, where it holds none) and returns the
// sink's ack; VerifyReference reads back what raw holds of the range.
type rawHolds struct{ held coverage.Range }

func (r rawHolds) Replay(context.Context, Task) error { return nil }

func (r rawHolds) VerifyReference(_ context.Context, t Task) ([]coverage.Range, error) {
	s, e := max(t.Range.Start, r.held.Start), min(t.Range.End, r.held.End)
	if s >= e {
		return nil, nil
	}
	return []coverage.Range{{Start: s, End: e}}, nil
}

// TestResumeOverReportedExtentClaimsNothing: the source acked [0,20) and raw
// durably holds exactly that; raw and the lake recorded [10,20). An extent
// whose end is over-reported (the broker's head rather than its committed
// position, or a book's stale end after the stream restarted) is documented
// as lag-safe: "an over-reported extent costs a verification, never ... a
// claimed batch" (ReferenceHoles, sidecar.ExtentBook). Resume instead hands
// the lake replay work for [20,1000), which raw neither committedly covers
// nor holds, and Recover records it for the lake: the lake's coverage
// leads raw's.
func TestResumeOverReportedExtentClaimsNothing(t *testing.T) {
	tbl := tabletest.EmbeddedTable(t)
	appendAt(t, tbl, "c1", "raw", "orders", 0, 10, 20, "lake", "orders", 0, 10, 20)
	raw := rawHolds{held: rg(0, 20)}
	extents := []coverage.Extent{{Topic: "orders", End: 1000}}
	as, err := Resume(ctx, tbl, "orders", 0, ResumeOptions{Sinks: []string{"lake"}, Extents: extents})
	if err != nil {
		t.Fatal(err)
	}
	store := memStore{}
	for _, a := range as {
		tasks, err := a.Tasks(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Recover(ctx, tasks, raw, store); err != nil {
			t.Fatal(err)
		}
	}
	lake := coverage.Destination{Sink: "lake", Topic: "orders"}
	got := store[lake]
	if got == nil {
		got = new(coverage.RangeSet)
	}
	for r := range got.All() {
		if r.End > raw.held.End {
			t.Fatalf("lake recorded %v (all: %v) from Resume's assignments %+v, but raw holds only %v: an over-reported extent made the lake's coverage lead", r, got.Ranges(), as, raw.held)
		}
	}
}
