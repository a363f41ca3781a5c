package recovery

import (
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// TestPlanOverReportedExtentHidesReplay: raw recorded [0,10), the
// warehouse (a sink whose name sorts after raw's) [0,5), and the source
// really acked [0,10). Without an extent the plan is the warehouse's replay
// of [5,10). With an over-reported extent (end 2,000,000,000) raw's
// unverifiable hole [10,2e9) fills the default plan (100,000 tasks of
// 10,000), which sorts raw's tasks before the warehouse's, so the
// warehouse's replay is never in it; verifying raw records nothing (raw
// holds nothing past 10), so every later plan is the same truncated head
// and the recovery loop never reaches the warehouse. An extent is
// documented to only ever add work ("never a hidden hole"); here it hides a
// task found without it.
func TestPlanOverReportedExtentHidesReplay(t *testing.T) {
	tbl := tabletest.EmbeddedTable(t)
	appendAt(t, tbl, "c1", "raw", "orders", 0, 0, 10, "warehouse", "orders", 0, 0, 5)
	want := Task{Destination: coverage.Destination{Sink: "warehouse", Topic: "orders"}, Range: rg(5, 10), Kind: KindReplay}
	without, err := Plan(ctx, tbl, PlanOptions{})
	if err != nil || !slices.Contains(without, want) {
		t.Fatalf("plan without an extent: %v %v, want it to hold %v", without, err, want)
	}
	store := memStore{}
	extents := []coverage.Extent{{Topic: "orders", End: 2_000_000_000}}
	for round := range 2 {
		tasks, err := Plan(ctx, tbl, PlanOptions{Extents: extents})
		if !slices.Contains(tasks, want) {
			t.Fatalf("round %d: plan with extent %v: %d tasks (%v), without the warehouse's replay %v found without the extent", round, extents, len(tasks), err, want)
		}
		if _, err := Recover(ctx, tasks, rawHolds{held: rg(0, 10)}, store); err != nil {
			t.Fatal(err)
		}
	}
}
