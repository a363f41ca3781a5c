package reconcile

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics is the Prometheus collector of scheduled reconciles: what the
// last run found claimed but absent, its failures, and when a run last
// succeeded. Observe feeds it each run's outcome.
type Metrics struct {
	mu          sync.Mutex
	interval    time.Duration
	absent      map[string]uint64 // sink -> claimed-absent batches at its last check
	failures    map[string]uint64 // sink -> failed checks, ever
	runs        uint64
	runFailures uint64
	lastRun     time.Time
	lastSuccess time.Time
}

// NewMetrics is the collector of runs every interval (zero: runs not on a
// schedule), for the sinks named (each exported from the start, so a rate
// of their failures exists before the first one).
func NewMetrics(interval time.Duration, sinks []string) *Metrics {
	m := &Metrics{interval: interval, absent: map[string]uint64{}, failures: map[string]uint64{}}
	for _, s := range sinks {
		m.absent[s], m.failures[s] = 0, 0
	}
	return m
}

// Observe records one run that ended at at: its report and the error Run
// returned. A run with no report (the tier unreadable, a bad option)
// counts as a failed run and changes no sink's figures. A sink some of
// whose checks failed keeps the larger of its last count and this run's,
// since its failed destinations' absences are unknown, not gone: a lag,
// never a claimed-absent alert silenced by a failing check.
func (m *Metrics) Observe(rep Report, err error, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs++
	m.lastRun = at
	if err != nil && rep.Checked == nil { // Run returns a report only with check failures
		m.runFailures++
		return
	}
	found := map[string]uint64{}
	for _, row := range rep.Absent {
		found[row.Sink] += row.End - row.Start
	}
	for _, c := range rep.Checked {
		if c.Failed {
			m.failures[c.Sink] += uint64(max(c.FailedDestinations, 1))
			m.absent[c.Sink] = max(m.absent[c.Sink], found[c.Sink])
			continue
		}
		m.absent[c.Sink] = found[c.Sink]
		if _, seen := m.failures[c.Sink]; !seen {
			m.failures[c.Sink] = 0
		}
	}
	if err == nil {
		m.lastSuccess = at
	}
}

var metricDescs = map[string]*prometheus.Desc{
	"absent": prometheus.NewDesc("covmirror_reconcile_claimed_absent_batches",
		"Batches committed coverage claims for the sink that the sink did not hold at the last reconcile.", []string{"sink"}, nil),
	"failures": prometheus.NewDesc("covmirror_reconcile_failures_total",
		"Failed checks of the sink (a destination whose check failed, or no committed coverage to check): nothing of them was reported absent.", []string{"sink"}, nil),
	"runs":        prometheus.NewDesc("covmirror_reconcile_runs_total", "Reconcile runs.", nil, nil),
	"runFailures": prometheus.NewDesc("covmirror_reconcile_run_failures_total", "Reconcile runs that checked nothing (the durable tier unreadable).", nil, nil),
	"lastRun":     prometheus.NewDesc("covmirror_reconcile_last_run_timestamp_seconds", "When a reconcile last ended, 0 before the first.", nil, nil),
	"success": prometheus.NewDesc("covmirror_reconcile_last_success_timestamp_seconds",
		"When a reconcile last checked every selected sink without a failure, 0 before the first.", nil, nil),
	"interval": prometheus.NewDesc("covmirror_reconcile_interval_seconds", "The configured interval between reconciles, for alerts on staleness.", nil, nil),
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range metricDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for s, n := range m.absent {
		ch <- prometheus.MustNewConstMetric(metricDescs["absent"], prometheus.GaugeValue, float64(n), s)
	}
	for s, n := range m.failures {
		ch <- prometheus.MustNewConstMetric(metricDescs["failures"], prometheus.CounterValue, float64(n), s)
	}
	ch <- prometheus.MustNewConstMetric(metricDescs["runs"], prometheus.CounterValue, float64(m.runs))
	ch <- prometheus.MustNewConstMetric(metricDescs["runFailures"], prometheus.CounterValue, float64(m.runFailures))
	ch <- prometheus.MustNewConstMetric(metricDescs["lastRun"], prometheus.GaugeValue, unixSeconds(m.lastRun))
	ch <- prometheus.MustNewConstMetric(metricDescs["success"], prometheus.GaugeValue, unixSeconds(m.lastSuccess))
	ch <- prometheus.MustNewConstMetric(metricDescs["interval"], prometheus.GaugeValue, m.interval.Seconds())
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
