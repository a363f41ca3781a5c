package mirror

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/covmirror/covmirror/coverage"
)

// TestCheckpointAgeMetric: the age counts from the collector's creation
// until a checkpoint succeeds, from the success after, and keeps growing
// while checkpoints fail.
func TestCheckpointAgeMetric(t *testing.T) {
	e := newEnv(t)
	e.shortCommitTimeout(t)
	m := e.owner(t, "", "pod-a")
	defer m.Close()
	var mu sync.Mutex
	now := time.Unix(1_700_000_000, 0)
	m.stats.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	c := m.Collector()
	advance(45 * time.Second)
	age := func() float64 { return metricValues(t, c)["covmirror_last_checkpoint_age_seconds"] }
	if got := age(); got != 45 {
		t.Fatalf("before any checkpoint: age %v, want 45 (since the collector was made)", got)
	}
	if got := metricValues(t, c)["covmirror_checkpoint_interval_seconds"]; got != 0.01 {
		t.Errorf("interval %v, want 0.01", got)
	}
	// Checkpoints fail (the catalog is down): the age keeps growing.
	e.cat.down.Store(true)
	record(t, m, coverage.Destination{Sink: "raw", Topic: "orders"}, 0, 5)
	if err := m.Sync(ctx); err == nil {
		t.Fatal("checkpoint with the catalog down succeeded")
	}
	advance(30 * time.Second)
	if got := age(); got != 75 {
		t.Fatalf("after a failed checkpoint: age %v, want 75", got)
	}
	e.cat.down.Store(false)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := age(); got != 0 {
		t.Fatalf("right after a checkpoint: age %v, want 0", got)
	}
	advance(20 * time.Second)
	if got := age(); got != 20 {
		t.Fatalf("20s after a checkpoint: age %v, want 20", got)
	}
}

// TestCheckpointedBatchesSaturate: the counter stops at 2^64-1 instead of
// wrapping to a small value that rate() would read as a reset.
func TestCheckpointedBatchesSaturate(t *testing.T) {
	var c saturating
	c.Add(math.MaxUint64 - 5)
	if got := c.Add(10); got != math.MaxUint64 {
		t.Fatalf("MaxUint64-5 + 10 = %d, want saturation at %d", got, uint64(math.MaxUint64))
	}
	if got := c.Add(1); got != math.MaxUint64 {
		t.Fatalf("after saturation: %d", got)
	}
}

// metricValues collects c into "name{sink}" -> value.
func metricValues(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range gather(t, reg) {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			for _, l := range m.GetLabel() {
				key += "{" + l.GetValue() + "}"
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
