package gapmetrics

import (
	"testing"

	"github.com/covmirror/covmirror/internal/tabletest"
)

// TestGapMetricsTopicSinks: raw, pg and es hold orders and clicks, lake
// only orders, which is all the pipeline writes it. Named for every topic,
// lake counts 500 missing batches of clicks (and its alerts fire); named
// for orders alone (TopicSinks), it counts none. warehouse, named for
// clicks with no rows of it, misses all of clicks and nothing of orders.
func TestGapMetricsTopicSinks(t *testing.T) {
	tbl := tabletest.EmbeddedTable(t)
	appendAt(t, tbl, "c1", "raw", "orders", 0, 0, 10, "raw", "clicks", 0, 0, 500,
		"pg", "orders", 0, 0, 10, "pg", "clicks", 0, 0, 500, "es", "orders", 0, 0, 10, "es", "clicks", 0, 0, 500,
		"lake", "orders", 0, 0, 10)
	missing := func(opts Options) map[string]uint64 {
		t.Helper()
		opts.Table = tbl
		g, err := New(opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		out := map[string]uint64{}
		for sink, s := range g.Sinks() {
			out[sink] = s.MissingBatches
		}
		return out
	}
	if got := missing(Options{Sinks: []string{"pg", "es", "lake"}}); got["lake"] != 500 {
		t.Errorf("lake named for every topic: %d missing, want all 500 of clicks", got["lake"])
	}
	got := missing(Options{Sinks: []string{"pg", "es"}, TopicSinks: map[string][]string{"orders": {"pg", "es", "lake"}, "clicks": {"pg", "es", "warehouse"}}})
	for sink, want := range map[string]uint64{"raw": 0, "pg": 0, "es": 0, "lake": 0, "warehouse": 500} {
		if n, ok := got[sink]; !ok || n != want {
			t.Errorf("%s: %d missing (listed %v), want %d", sink, n, ok, want)
		}
	}
}
