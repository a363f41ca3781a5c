package gapmetrics

import (
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/tabletest"
)

// TestGapMetricsWriterClockAhead: rows recorded by a writer whose clock is
// ahead of this process's date a gap in this process's future. The gap is
// still known from the first refresh that sees it, so its age counts from
// then (this process's memory), not from the writer's future time: an age
// that stays 0 for the skew would fire the gap alerts that much late.
func TestGapMetricsWriterClockAhead(t *testing.T) {
	tbl := tabletest.EmbeddedTable(t)
	_, after := appendAt(t, tbl, "c1", "raw", "orders", 0, 0, 10, "lake", "orders", 0, 0, 5)
	now := after.Add(-time.Hour) // the writer's clock is an hour ahead
	first := now
	g, err := New(Options{Table: tbl, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	now = now.Add(10 * time.Minute)
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := g.Sinks()["lake"].OldestSince; !got.Equal(first) {
		t.Errorf("lake's gap dated %v, want the first refresh that saw it, %v", got, first)
	}
	if age := metricValues(t, g)["covmirror_sink_oldest_gap_age_seconds{lake}"]; age != (10 * time.Minute).Seconds() {
		t.Errorf("lake's gap age %v s, want 600", age)
	}
}
