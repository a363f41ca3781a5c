package reconcile

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/covmirror/covmirror/coverage"
)

// Metrics is the Prometheus collector of scheduled reconciles: what the
// last run found claimed but absent, its failures, and when a run last
// succeeded. Observe feeds it each run's outcome.
type Metrics struct {
	mu       sync.Mutex
	interval time.Duration
	// absent holds, per sink some check of which has succeeded, each
	// destination's batches last found absent and not asked about since.
	absent      map[string]map[coverage.Destination]*coverage.RangeSet
	failures    map[string]uint64 // sink -> failed checks, ever
	runs        uint64
	runFailures uint64
	lastRun     time.Time
	lastSuccess time.Time
	started     time.Time
}

// NewMetrics is the collector of runs every interval (zero: runs not on a
// schedule), for the sinks named: their failures are exported from the
// start, so a rate of them exists before the first one. A sink's
// claimed-absent count is exported once a check of it has succeeded:
// before, it is unknown, never zero.
func NewMetrics(interval time.Duration, sinks []string) *Metrics {
	m := &Metrics{interval: interval, absent: map[string]map[coverage.Destination]*coverage.RangeSet{}, failures: map[string]uint64{}, started: time.Now()}
	for _, s := range sinks {
		m.failures[s] = 0
	}
	return m
}

// Observe records one run that ended at at: its report (made by Run) and
// the error Run returned. A run with no report (the tier unreadable, a bad
// option) counts as a failed run and changes no sink's figures. A
// destination's absences are forgotten only where a run asked about its
// batches again and found them held: a destination whose check failed, or
// the batches a sampled run did not draw, keep what was last found, since
// their absences are unknown, not gone: a lag, never a claimed-absent
// alert silenced by a failing check or a lucky sample.
func (m *Metrics) Observe(rep Report, err error, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.runs++
	m.lastRun = at
	if err != nil && rep.Checked == nil { // Run returns a report only with check failures
		m.runFailures++
		return
	}
	found := map[coverage.Destination]*coverage.RangeSet{}
	for _, row := range rep.Absent {
		d := coverage.Destination{Sink: row.Sink, Topic: row.Topic, Partition: row.Partition}
		if found[d] == nil {
			found[d] = new(coverage.RangeSet)
		}
		_ = found[d].Add(coverage.Range{Start: row.Start, End: row.End}) // Run's rows are valid
	}
	for d, asked := range rep.asked {
		if m.absent[d.Sink] == nil {
			m.absent[d.Sink] = map[coverage.Destination]*coverage.RangeSet{}
		}
		next := new(coverage.RangeSet)
		if last := m.absent[d.Sink][d]; last != nil {
			g := coverage.Gaps(last, asked)
			next = &g
		}
		if f := found[d]; f != nil {
			next.Union(f)
		}
		m.absent[d.Sink][d] = next
	}
	for _, c := range rep.Checked {
		if c.Failed {
			m.failures[c.Sink] += uint64(max(c.FailedDestinations, 1))
		} else if _, seen := m.failures[c.Sink]; !seen {
			m.failures[c.Sink] = 0
		}
	}
	if err == nil {
		m.lastSuccess = at
	}
}

var metricDescs = map[string]*prometheus.Desc{
	"absent": prometheus.NewDesc("covmirror_reconcile_claimed_absent_batches",
		"Batches committed coverage claims for the sink that the sink did not hold when a reconcile last asked about them.", []string{"sink"}, nil),
	"failures": prometheus.NewDesc("covmirror_reconcile_failures_total",
		"Failed checks of the sink (a destination whose check failed, or no committed coverage to check): nothing of them was reported absent.", []string{"sink"}, nil),
	"runs":        prometheus.NewDesc("covmirror_reconcile_runs_total", "Reconcile runs.", nil, nil),
	"runFailures": prometheus.NewDesc("covmirror_reconcile_run_failures_total", "Reconcile runs that checked nothing (the durable tier unreadable).", nil, nil),
	"lastRun":     prometheus.NewDesc("covmirror_reconcile_last_run_timestamp_seconds", "When a reconcile last ended, 0 before the first.", nil, nil),
	"success": prometheus.NewDesc("covmirror_reconcile_last_success_timestamp_seconds",
		"When a reconcile last checked every selected sink without a failure, 0 before the first.", nil, nil),
	"started": prometheus.NewDesc("covmirror_reconcile_started_timestamp_seconds",
		"When the job began: the staleness alert counts from it until the first success, so a long first run is not stale.", nil, nil),
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
	for s, dests := range m.absent {
		var n uint64
		for _, set := range dests {
			n += set.Batches()
		}
		ch <- prometheus.MustNewConstMetric(metricDescs["absent"], prometheus.GaugeValue, float64(n), s)
	}
	for s, n := range m.failures {
		ch <- prometheus.MustNewConstMetric(metricDescs["failures"], prometheus.CounterValue, float64(n), s)
	}
	ch <- prometheus.MustNewConstMetric(metricDescs["runs"], prometheus.CounterValue, float64(m.runs))
	ch <- prometheus.MustNewConstMetric(metricDescs["runFailures"], prometheus.CounterValue, float64(m.runFailures))
	ch <- prometheus.MustNewConstMetric(metricDescs["lastRun"], prometheus.GaugeValue, unixSeconds(m.lastRun))
	ch <- prometheus.MustNewConstMetric(metricDescs["success"], prometheus.GaugeValue, unixSeconds(m.lastSuccess))
	ch <- prometheus.MustNewConstMetric(metricDescs["started"], prometheus.GaugeValue, unixSeconds(m.started))
	ch <- prometheus.MustNewConstMetric(metricDescs["interval"], prometheus.GaugeValue, m.interval.Seconds())
}

func unixSeconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
