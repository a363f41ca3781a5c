package gapmetrics

import (
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// TestGapMetricsCountExtentHoles: raw and the lake lost their records of
// orders/0's first ten batches and recorded [10,20): no gap shows between
// the lowest and highest batch anyone covers, but with the source's acked
// extent [0,20) the gap metrics count raw's hole [0,10).
func TestGapMetricsCountExtentHoles(t *testing.T) {
	tbl := tabletest.EmbeddedTable(t)
	appendAt(t, tbl, "c1", "raw", "orders", 0, 10, 20, "lake", "orders", 0, 10, 20)
	var extents []coverage.Extent
	g, err := New(Options{Table: tbl, Extents: func() []coverage.Extent { return extents }})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		extents []coverage.Extent
		raw     SinkGaps
	}{
		{nil, SinkGaps{}},
		{[]coverage.Extent{{Topic: "orders", End: 20}}, SinkGaps{Gaps: 1, MissingBatches: 10}},
	} {
		extents = c.extents
		if err := g.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		got := g.Sinks()["raw"]
		got.OldestSince = time.Time{}
		if got != c.raw || g.Sinks()["lake"].Gaps != 0 {
			t.Fatalf("extents %v: raw %+v lake %+v, want raw %+v and no lake gap", c.extents, got, g.Sinks()["lake"], c.raw)
		}
	}
}
