package gapmetrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/recovery"
)

// appendAt commits ranges (sink, topic, partition, start, end) into t and
// returns wall-clock bounds around the commit: its rows' recorded_at lies
// between them.
func appendAt(t *testing.T, tbl *iceberg.Table, name string, rows ...any) (before, after time.Time) {
	t.Helper()
	var drs []coverage.DestinationRanges
	for i := 0; i+4 < len(rows); i += 5 {
		d := coverage.Destination{Sink: rows[i].(string), Topic: rows[i+1].(string), Partition: int32(rows[i+2].(int))}
		drs = append(drs, coverage.DestinationRanges{Destination: d,
			Ranges: []coverage.Range{rg(uint64(rows[i+3].(int)), uint64(rows[i+4].(int)))}})
	}
	before = time.Now().Truncate(time.Microsecond) // recorded_at is stored in microseconds
	if err := tbl.Append(ctx, durable.Checkpoint{Name: name, Writer: "test", Ranges: drs}); err != nil {
		t.Fatal(err)
	}
	after = time.Now()
	time.Sleep(20 * time.Millisecond) // commits' bounds do not overlap
	return before, after
}

// metricValues collects c into "name{sink}" -> value for the gaps a
// replay closes (kind replay, or verify-reference for the reference), and
// "name{sink}{kind}" for the held kinds.
func metricValues(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range gather(t, reg) {
		for _, m := range f.GetMetric() {
			key, kind := f.GetName(), ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "kind" {
					kind = l.GetValue()
					continue
				}
				key += "{" + l.GetValue() + "}"
			}
			if kind != "" && kind != "replay" && kind != "verify-reference" {
				key += "{" + kind + "}"
			}
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func gather(t *testing.T, reg *prometheus.Registry) []*dto.MetricFamily {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// withinAge checks that an age measured at now lies between now-after and
// now-before.
func withinAge(t *testing.T, what string, age float64, now, before, after time.Time) {
	t.Helper()
	lo, hi := now.Sub(after).Seconds(), now.Sub(before).Seconds()
	if age < lo-1e-6 || age > hi+1e-6 {
		t.Errorf("%s: age %.6fs, want within [%.6f, %.6f]", what, age, lo, hi)
	}
}

// TestGapMetricsKnownHistory reads a real embedded table with a known
// history of two commits and checks every sink's gap count, missing batches
// and the oldest gap's age against the commits' times, the reference's
// holes included; then compacts the table and checks the ages stay, in
// this process and in a fresh one.
func TestGapMetricsKnownHistory(t *testing.T) {
	tbl := tabletest.EmbeddedTable(t)
	// Commit 1: raw 0/[0,10) and 1/[0,4); lake 0/[0,5) and 1/[0,4);
	// search 0/[0,10), never partition 1.
	b1, a1 := appendAt(t, tbl, "c1",
		"raw", "orders", 0, 0, 10, "raw", "orders", 1, 0, 4,
		"lake", "orders", 0, 0, 5, "lake", "orders", 1, 0, 4,
		"search", "orders", 0, 0, 10)
	// Commit 2: raw 0/[12,20) (its record of 10 and 11 is lost), lake
	// 0/[7,20).
	b2, a2 := appendAt(t, tbl, "c2", "raw", "orders", 0, 12, 20, "lake", "orders", 0, 7, 20)
	now := a2.Add(time.Hour)
	clock := func() time.Time { return now }
	g, err := New(Options{Table: tbl, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	// raw: the hole [10,12). lake: [5,7). search: 0/[12,20), 1/[0,4).
	want := map[string][2]uint64{"raw": {1, 2}, "lake": {1, 2}, "search": {2, 12}}
	got := g.Sinks()
	if len(got) != len(want) {
		t.Fatalf("sinks %v, want %v", got, want)
	}
	for sink, w := range want {
		if got[sink].Gaps != w[0] || got[sink].MissingBatches != w[1] {
			t.Errorf("%s: %d gaps of %d batches, want %d of %d", sink, got[sink].Gaps, got[sink].MissingBatches, w[0], w[1])
		}
	}
	check := func(stage string, g *Metrics) {
		t.Helper()
		v := metricValues(t, g)
		for sink, w := range want {
			if v["covmirror_sink_gaps{"+sink+"}"] != float64(w[0]) || v["covmirror_sink_missing_batches{"+sink+"}"] != float64(w[1]) {
				t.Errorf("%s: %s exported %v gaps, %v batches, want %v", stage, sink, v["covmirror_sink_gaps{"+sink+"}"], v["covmirror_sink_missing_batches{"+sink+"}"], w)
			}
		}
		// lake's [5,7) shows from raw's row [0,10) of commit 1.
		withinAge(t, stage+": lake", v["covmirror_sink_oldest_gap_age_seconds{lake}"], now, b1, a1)
		// search's oldest is 1/[0,4), under raw's row of commit 1.
		withinAge(t, stage+": search", v["covmirror_sink_oldest_gap_age_seconds{search}"], now, b1, a1)
		// raw's hole [10,12) shows once rows lie above it: commit 2.
		withinAge(t, stage+": raw", v["covmirror_sink_oldest_gap_age_seconds{raw}"], now, b2, a2)
		if v["covmirror_gap_refresh_last_success_timestamp_seconds"] != float64(now.UnixNano())/1e9 {
			t.Errorf("%s: last success %v, want %v", stage, v["covmirror_gap_refresh_last_success_timestamp_seconds"], now)
		}
	}
	check("first refresh", g)

	// Compaction rewrites every sink's rows, each merged row keeping the
	// latest recorded_at of the rows it merged; the gaps keep their start,
	// so this process's memory keeps their age.
	if _, err := compaction.Compact(ctx, tbl, compaction.Options{MinSmallFiles: 1}); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Minute)
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	check("after compaction", g)

	// A fresh process after the compaction sees only the rewritten rows.
	// No two rows of a destination here touch, so none merged and each
	// kept its own recorded_at: the ages are those of the commits, not of
	// the rewrite.
	fresh, _ := New(Options{Table: tbl, Now: clock})
	if err := fresh.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	check("fresh process after compaction", fresh)

	// Replaying lake's gap closes it: zero gaps, age 0, the series kept.
	appendAt(t, tbl, "c3", "lake", "orders", 0, 5, 7)
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	v := metricValues(t, g)
	if v["covmirror_sink_gaps{lake}"] != 0 || v["covmirror_sink_oldest_gap_age_seconds{lake}"] != 0 {
		t.Errorf("after lake's replay: %v gaps, age %v, want 0 and 0", v["covmirror_sink_gaps{lake}"], v["covmirror_sink_oldest_gap_age_seconds{lake}"])
	}
	if len(g.seen) != 3 { // raw's hole, search's two gaps
		t.Errorf("remembered %d gaps, want 3: closed gaps are forgotten", len(g.seen))
	}
}

// TestGapMetricsEmptyTable: a table without a snapshot exports the
// reference with no gaps, and a misspelled reference in a table with rows
// is a failed refresh (not a table without gaps).
func TestGapMetricsEmptyTable(t *testing.T) {
	tbl := tabletest.EmbeddedTable(t)
	g, _ := New(Options{Table: tbl})
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := g.Sinks(); len(got) != 1 || got["raw"] != (SinkGaps{}) {
		t.Fatalf("empty table: %v, want raw without gaps", got)
	}
	appendAt(t, tbl, "c1", "raw", "orders", 0, 0, 10)
	typo, _ := New(Options{Table: tbl, Reference: "rwa"})
	if err := typo.Refresh(ctx); !errors.Is(err, recovery.ErrNoReference) {
		t.Fatalf("misspelled reference: %v, want ErrNoReference", err)
	}
}

// TestGapMetricsRefreshFailure: while the catalog is down, refreshes fail,
// are counted and logged by Run, and the last good values stay exported
// with the last success's time; once it is back, the next refresh succeeds.
func TestGapMetricsRefreshFailure(t *testing.T) {
	e := newEnv(t)
	appendAt(t, e.Table, "c1", "raw", "orders", 0, 0, 10, "lake", "orders", 0, 0, 4)
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	var logs logtest.Buffer
	g, err := New(Options{Table: e.Table, Now: clock, Interval: 5 * time.Millisecond, Timeout: 10 * time.Second,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	good := g.Sinks()
	okAt := now
	e.Cat.Down.Store(true)
	mu.Lock()
	now = now.Add(time.Minute)
	mu.Unlock()
	if err := g.Refresh(ctx); !errors.Is(err, errDown) || !errors.Is(err, coverage.ErrUnavailable) {
		t.Fatalf("refresh with the catalog down: %v, want the catalog's error, unavailable", err)
	}
	// Run keeps failing on its ticker, logging each.
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.Run(runCtx) }()
	deadline := time.Now().Add(10 * time.Second)
	for metricValues(t, g)["covmirror_gap_refresh_failures_total"] < 3 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run returned %v after cancel, want nil", err)
	}
	v := metricValues(t, g)
	if v["covmirror_gap_refresh_failures_total"] < 3 || v["covmirror_gap_refresh_consecutive_failures"] != v["covmirror_gap_refresh_failures_total"] {
		t.Fatalf("failures %v, consecutive %v: want at least 3, all in a row", v["covmirror_gap_refresh_failures_total"], v["covmirror_gap_refresh_consecutive_failures"])
	}
	if v["covmirror_gap_refreshes_total"] != 1 || v["covmirror_gap_refresh_last_success_timestamp_seconds"] != float64(okAt.UnixNano())/1e9 {
		t.Errorf("refreshes %v, last success %v: want 1 and the first refresh's time", v["covmirror_gap_refreshes_total"], v["covmirror_gap_refresh_last_success_timestamp_seconds"])
	}
	if fmt.Sprint(g.Sinks()) != fmt.Sprint(good) || v["covmirror_sink_gaps{lake}"] != 1 || v["covmirror_sink_missing_batches{lake}"] != 6 {
		t.Errorf("values while failing: %v (lake %v gaps, %v batches), want the last good %v", g.Sinks(), v["covmirror_sink_gaps{lake}"], v["covmirror_sink_missing_batches{lake}"], good)
	}
	if !strings.Contains(logs.String(), "gap metrics refresh failed") || !strings.Contains(logs.String(), errDown.Error()) {
		t.Errorf("logs %q: want each failure with the catalog's error", logs.String())
	}
	e.Cat.Down.Store(false)
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if v := metricValues(t, g); v["covmirror_gap_refresh_consecutive_failures"] != 0 || v["covmirror_gap_refreshes_total"] != 2 {
		t.Errorf("after recovery: consecutive %v, refreshes %v; want 0 and 2", v["covmirror_gap_refresh_consecutive_failures"], v["covmirror_gap_refreshes_total"])
	}
}

// TestMetricsLint: names, help texts and units pass Prometheus's own lint.
func TestMetricsLint(t *testing.T) {
	e := newEnv(t)
	m := e.Owner(t, "", "pod-a")
	defer m.Close()
	g, _ := New(Options{Table: e.Table})
	appendAt(t, e.Table, "c1", "raw", "orders", 0, 0, 10, "lake", "orders", 0, 0, 4)
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []prometheus.Collector{m.Collector(), g} {
		reg := prometheus.NewPedanticRegistry()
		if err := reg.Register(c); err != nil {
			t.Fatal(err)
		}
		problems, err := promlint.NewWithMetricFamilies(gather(t, reg)).Lint()
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Errorf("%s: %s", p.Metric, p.Text)
		}
	}
}

// TestGapMetricsMaxSinks: caller-chosen sink names cannot grow /metrics
// without bound: past MaxSinks, the sinks with the most missing batches
// are exported by name, the reference always, and the rest summed into
// sink="(other)"; Sinks still has every sink.
func TestGapMetricsMaxSinks(t *testing.T) {
	tbl := tabletest.EmbeddedTable(t)
	rows := []any{"raw", "orders", 0, 0, 100}
	for i := range 10 { // s0 misses 99 batches, s9 misses 90
		rows = append(rows, fmt.Sprintf("s%d", i), "orders", 0, 0, i+1)
	}
	appendAt(t, tbl, "c1", rows...)
	g, err := New(Options{Table: tbl, MaxSinks: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(g.Sinks()); n != 11 {
		t.Errorf("Sinks has %d sinks, want all 11", n)
	}
	v := metricValues(t, g)
	series := 0
	for k := range v {
		if strings.HasPrefix(k, "covmirror_sink_missing_batches{") && strings.Count(k, "{") == 1 {
			series++
		}
	}
	want := map[string]float64{"raw": 0, "s0": 99, "s1": 98, "s2": 97, "(other)": 96 + 95 + 94 + 93 + 92 + 91 + 90}
	if series != len(want) {
		t.Errorf("%d sinks exported, want %d: %v", series, len(want), v)
	}
	for sink, w := range want {
		if got, ok := v["covmirror_sink_missing_batches{"+sink+"}"]; !ok || got != w {
			t.Errorf("%s: missing batches %v (exported %v), want %v", sink, got, ok, w)
		}
	}
	if v["covmirror_sink_gaps{(other)}"] != 7 {
		t.Errorf("(other) has %v gaps, want 7", v["covmirror_sink_gaps{(other)}"])
	}
	if _, ok := v["covmirror_sink_oldest_gap_age_seconds{(other)}"]; !ok {
		t.Error("(other) has no age series")
	}
}
