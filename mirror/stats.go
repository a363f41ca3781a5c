package mirror

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Stats are the Mirror's counters and gauges.
type Stats struct {
	Records             uint64        // ranges recorded through this Mirror
	Checkpoints         uint64        // checkpoints committed to the durable tier
	CheckpointedBatches uint64        // batches those checkpoints carried
	Joined              uint64        // Checkpoint calls that joined another's commit
	CommitConflicts     uint64        // durable-tier commit attempts lost to other writers
	Failures            uint64        // Syncs that returned an error
	ConsecutiveFailures uint64        // failures since the last success
	PendingBatches      uint64        // recorded locally, not yet checkpointed
	LastLatency         time.Duration // of the last Sync, successful or not
	LastSuccess         time.Time     // zero until a Sync succeeds
	LastError           string        // of the last failed Sync; empty after a success
	// LastReached is when a checkpoint last committed ranges or positions
	// to the durable tier: zero until one did. An empty checkpoint (nothing
	// pending) reaches nothing, so an idle pod's stays old.
	LastReached time.Time
}

type stats struct {
	records             atomic.Uint64
	checkpoints         atomic.Uint64
	joined              atomic.Uint64
	checkpointedBatches saturating // a checkpoint can carry more than 2^64 batches in all

	mu          sync.Mutex
	now         func() time.Time // the clock for ages; nil: time.Now
	since       time.Time        // when the collector was made: the age's origin before any success
	failures    uint64
	consecutive uint64
	lastLatency time.Duration
	lastSuccess time.Time
	lastReached time.Time
	lastError   string
	latency     prometheus.Histogram
	// commits times the two commits of each checkpoint, by tier: local
	// (marking the ranges checkpointed) and durable (the append).
	commits *prometheus.HistogramVec
}

// reached notes that the durable tier took a commit.
func (s *stats) reached() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastReached = s.clock()
}

// commitTimed observes one commit's duration into tier's histogram, once
// Collector made it.
func (s *stats) commitTimed(tier string, start time.Time) {
	s.mu.Lock()
	h := s.commits
	s.mu.Unlock()
	if h != nil {
		h.WithLabelValues(tier).Observe(time.Since(start).Seconds())
	}
}

func (s *stats) observe(start time.Time, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastLatency = time.Since(start)
	if s.latency != nil {
		s.latency.Observe(s.lastLatency.Seconds())
	}
	if err != nil {
		s.failures++
		s.consecutive++
		s.lastError = err.Error()
		return
	}
	s.consecutive = 0
	s.lastSuccess = s.clock()
	s.lastError = ""
}

// saturating is a counter that stops at the largest uint64 instead of
// wrapping to a small value, which a rate() would read as a reset.
type saturating struct{ v atomic.Uint64 }

// Add adds n, saturating, and returns the new value.
func (c *saturating) Add(n uint64) uint64 {
	for {
		old := c.v.Load()
		sum := old + n
		if sum < old {
			sum = math.MaxUint64
		}
		if c.v.CompareAndSwap(old, sum) {
			return sum
		}
	}
}

// Load returns the value.
func (c *saturating) Load() uint64 { return c.v.Load() }

// clock is the stats' time; call with mu held.
func (s *stats) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// Stats returns the current counters. PendingBatches comes from the local
// tier.
func (m *Mirror) Stats() Stats {
	s := &m.stats
	s.mu.Lock()
	out := Stats{Failures: s.failures, ConsecutiveFailures: s.consecutive, LastLatency: s.lastLatency,
		LastSuccess: s.lastSuccess, LastReached: s.lastReached, LastError: s.lastError}
	s.mu.Unlock()
	out.Records, out.Checkpoints, out.CheckpointedBatches = s.records.Load(), s.checkpoints.Load(), s.checkpointedBatches.Load()
	out.Joined, out.CommitConflicts = s.joined.Load(), m.conflicts.total.Load()
	out.PendingBatches = m.opts.Local.PendingBatches()
	return out
}

// Collector returns Prometheus collectors for the Mirror's stats, for the
// caller to register: covmirror_records_total, covmirror_checkpoints_total,
// covmirror_checkpointed_batches_total, covmirror_checkpoint_failures_total,
// covmirror_checkpoint_commit_conflicts_total, covmirror_checkpoints_joined_total,
// covmirror_checkpoint_consecutive_failures, covmirror_pending_batches,
// covmirror_last_checkpoint_success_timestamp_seconds,
// covmirror_last_checkpoint_age_seconds (since the collector was made while
// no checkpoint has succeeded), covmirror_checkpoint_interval_seconds, the
// covmirror_checkpoint_duration_seconds histogram and the
// covmirror_checkpoint_commit_duration_seconds{tier} histogram (tier local
// or durable: each commit of a checkpoint that made one).
func (m *Mirror) Collector() prometheus.Collector {
	m.stats.mu.Lock()
	if m.stats.since.IsZero() {
		m.stats.since = m.stats.clock()
	}
	if m.stats.latency == nil {
		m.stats.latency = prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "covmirror_checkpoint_duration_seconds",
			Help:    "Latency of checkpoints into the durable tier, failed ones included.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 14),
		})
	}
	if m.stats.commits == nil {
		m.stats.commits = prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "covmirror_checkpoint_commit_duration_seconds",
			Help:    "Latency of each commit of a checkpoint, failed ones included: tier durable is the append, tier local marks the ranges checkpointed.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}, []string{"tier"})
	}
	m.stats.mu.Unlock()
	return &collector{m: m}
}

type collector struct{ m *Mirror }

var descs = map[string]*prometheus.Desc{
	"records":     prometheus.NewDesc("covmirror_records_total", "Ranges recorded into the local tier.", nil, nil),
	"checkpoints": prometheus.NewDesc("covmirror_checkpoints_total", "Checkpoints committed to the durable tier.", nil, nil),
	"batches":     prometheus.NewDesc("covmirror_checkpointed_batches_total", "Batches carried by committed checkpoints.", nil, nil),
	"failures":    prometheus.NewDesc("covmirror_checkpoint_failures_total", "Checkpoints that failed; their ranges stayed pending.", nil, nil),
	"conflicts": prometheus.NewDesc("covmirror_checkpoint_commit_conflicts_total",
		"Commit attempts of checkpoints that lost to another writer of the durable tier and were retried (the coverage table counts them).", nil, nil),
	"joined": prometheus.NewDesc("covmirror_checkpoints_joined_total",
		"Checkpoint calls that arrived while one ran and were carried by the next one's commit.", nil, nil),
	"consecutive": prometheus.NewDesc("covmirror_checkpoint_consecutive_failures", "Failed checkpoints since the last success.", nil, nil),
	"pending":     prometheus.NewDesc("covmirror_pending_batches", "Batches recorded locally and not yet checkpointed.", nil, nil),
	"success":     prometheus.NewDesc("covmirror_last_checkpoint_success_timestamp_seconds", "When a checkpoint last succeeded.", nil, nil),
	"age": prometheus.NewDesc("covmirror_last_checkpoint_age_seconds",
		"Seconds since a checkpoint last succeeded (an idle pod's empty checkpoint counts); before the first success, since the process started serving metrics.", nil, nil),
	"interval": prometheus.NewDesc("covmirror_checkpoint_interval_seconds", "The configured checkpoint interval, for alerts on the age.", nil, nil),
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range descs {
		ch <- d
	}
	c.m.stats.latency.Describe(ch)
	c.m.stats.commits.Describe(ch)
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	s := c.m.Stats()
	counter := func(name string, v uint64) {
		ch <- prometheus.MustNewConstMetric(descs[name], prometheus.CounterValue, float64(v))
	}
	gauge := func(name string, v float64) {
		ch <- prometheus.MustNewConstMetric(descs[name], prometheus.GaugeValue, v)
	}
	counter("records", s.Records)
	counter("checkpoints", s.Checkpoints)
	counter("batches", s.CheckpointedBatches)
	counter("failures", s.Failures)
	counter("conflicts", s.CommitConflicts)
	counter("joined", s.Joined)
	gauge("consecutive", float64(s.ConsecutiveFailures))
	gauge("pending", float64(s.PendingBatches))
	if !s.LastSuccess.IsZero() {
		gauge("success", float64(s.LastSuccess.UnixNano())/1e9)
	}
	c.m.stats.mu.Lock()
	now, origin := c.m.stats.clock(), c.m.stats.since
	c.m.stats.mu.Unlock()
	if !s.LastSuccess.IsZero() {
		origin = s.LastSuccess
	}
	gauge("age", max(now.Sub(origin).Seconds(), 0))
	gauge("interval", c.m.opts.Interval.Seconds())
	c.m.stats.latency.Collect(ch)
	c.m.stats.commits.Collect(ch)
}
