package gapmetrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/recovery"
)

// Options configures New. Zero values are documented
// defaults.
type Options struct {
	// Table is the durable coverage table the gaps are read from. Required.
	Table *iceberg.Table
	// States are the gap states (package gapstate) that hold gaps out of
	// the replay plan; those gaps are counted by their kind. Zero value:
	// Table's own when it keeps them (durable.StateStore), else none.
	States durable.StateStore
	// Reference is raw's sink name. Zero value: coverage.RawSink.
	Reference string
	// Sinks are sinks every reference partition is written to, besides
	// those with rows, as recovery.PlanOptions.Sinks. Zero value: per topic, the
	// sinks the table has rows of.
	Sinks []string
	// TopicSinks are the named sinks per topic, in place of Sinks for its
	// keys, as recovery.PlanOptions.TopicSinks: a sink is counted missing
	// only in the topics it is named for (and those it has rows of). Zero
	// value: Sinks for every topic.
	TopicSinks map[string][]string
	// Extents, when set, gives each refresh the source's acked extents
	// (recovery.PlanOptions.Extents): the reference's holes are then counted over
	// them too, so a stream's first or last stretch lost on every tier is a
	// gap of the reference here as well. It must return valid extents
	// (coverage.ValidateExtents); an invalid one fails the refresh. Zero
	// value: none known.
	Extents func() []coverage.Extent
	// Interval is the time between refreshes in Run. Every refresh reads
	// the whole table, as recovery.Plan does. Zero value: DefaultInterval.
	Interval time.Duration
	// Timeout bounds one refresh. Zero value: Interval.
	Timeout time.Duration
	// MaxSinks bounds the per-sink series exported: sink names are chosen
	// by the callers that record, and each exported sink costs nine
	// series (three for the reference). Past MaxSinks sinks, the MaxSinks
	// with the most missing batches not waived are exported by name, the
	// reference always, and the rest summed into one series labelled
	// sink="(other)" (gaps and missing batches summed, the oldest gap's age
	// the oldest of theirs). Sinks still returns every sink. Zero value:
	// DefaultMaxSinks.
	MaxSinks int
	// Logger receives failed refreshes. Zero value: discard.
	Logger *slog.Logger
	// Now is the clock for ages. Zero value: time.Now.
	Now func() time.Time
}

// The defaults of Options, each used by name.
const (
	// DefaultInterval is the time between refreshes: each reads the whole
	// table, so it is minutes, not seconds.
	DefaultInterval = 2 * time.Minute
	// DefaultMaxSinks bounds the sinks exported by name (nine series each).
	DefaultMaxSinks = 100
)

// EnsureDefaults fills in zero values.
func (o *Options) EnsureDefaults() {
	if o.Reference == "" {
		o.Reference = coverage.RawSink
	}
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.Timeout == 0 {
		o.Timeout = o.Interval
	}
	if o.MaxSinks == 0 {
		o.MaxSinks = DefaultMaxSinks
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Validate reports unusable options.
func (o *Options) Validate() error {
	switch {
	case o.Table == nil:
		return errors.New("gapmetrics: Options.Table is nil: open the coverage table with iceberg.Open")
	case o.Interval < 0 || o.Timeout < 0:
		return errors.New("gapmetrics: Options.Interval and Timeout must not be negative")
	case o.MaxSinks < 0:
		return errors.New("gapmetrics: Options.MaxSinks must not be negative")
	}
	return nil
}

// SinkGaps is one sink's gaps in the durable table as of a refresh: those
// a replay closes (recovery.Plan's tasks), and apart, by kind, those the
// gap states hold out of the plan. For the reference they are its own
// holes (recovery.Plan's verify-reference tasks), which no state holds.
type SinkGaps struct {
	Gaps           uint64 // maximal missing ranges a replay closes
	MissingBatches uint64 // batches in them, saturating at 2^64-1
	// OldestSince is when the oldest of those gaps was first known to
	// exist; zero without gaps. See Metrics for what "known" means.
	OldestSince time.Time
	// Refused, Unrecoverable and Waived are the gaps held out of the plan
	// in each state (recovery.CommittedGaps lists them).
	Refused, Unrecoverable, Waived Held
}

// Held counts one sink's gaps of one held kind. A held gap is still
// missing: it is never coverage, only out of the replay plan.
type Held struct {
	Gaps           uint64 // ranges, cut where their decisions differ
	MissingBatches uint64 // batches in them, saturating at 2^64-1
}

func (h *Held) add(o Held) {
	h.Gaps = coverage.AddSaturating(h.Gaps, o.Gaps)
	h.MissingBatches = coverage.AddSaturating(h.MissingBatches, o.MissingBatches)
}

// held returns s's count of kind k, nil for a kind no state holds.
func (s *SinkGaps) held(k recovery.TaskKind) *Held {
	switch k {
	case recovery.KindRefused:
		return &s.Refused
	case recovery.KindUnrecoverable:
		return &s.Unrecoverable
	case recovery.KindWaived:
		return &s.Waived
	}
	return nil
}

// heldKinds are the kinds exported apart, in order.
var heldKinds = []recovery.TaskKind{recovery.KindRefused, recovery.KindUnrecoverable, recovery.KindWaived}

// attention is how much of s an operator must act on: every missing batch
// but the waived ones, for choosing the sinks exported by name.
func (s *SinkGaps) attention() uint64 {
	return coverage.AddSaturating(s.MissingBatches, coverage.AddSaturating(s.Refused.MissingBatches, s.Unrecoverable.MissingBatches))
}

// Metrics is a Prometheus collector of every sink's gaps in the durable
// coverage table, refreshed by Run on an interval (or by Refresh). A failed
// refresh is logged and counted and the last good values stay exported, with
// the time of the last success, so that a flapping catalog does not blank
// the dashboards. Labels are the sink only: a table of 10,000 destinations
// exports one series per sink.
//
// A gap's age is the longer of two lower bounds: since the earliest row that
// shows it (for a sink's gap, the reference's rows over it; for a hole of the
// reference, the first moment rows of the partition lay on both sides of
// it), by their recorded_at; and since this process first saw a gap of the
// same destination starting at the same batch. Compaction gives a merged
// row the latest recorded_at of the rows it merged, which may be later than
// the earliest row over a gap, so the second bound is what keeps a stuck
// gap ageing across compactions; a gap whose start moves (a replay in
// progress, a sink that lags but writes) starts over.
type Metrics struct {
	opts Options

	refreshMu                        sync.Mutex           // one refresh at a time
	seen                             map[gapKey]time.Time // first seen, per current gap; guarded by refreshMu
	mu                               sync.Mutex           // guards what follows
	sinks                            map[string]SinkGaps  // as of lastSuccess
	exported                         map[string]SinkGaps  // sinks, at most MaxSinks of them and (other)
	lastOK                           time.Time            // zero until a refresh succeeds
	lastDur                          time.Duration        // of the last refresh, failed or not
	refreshes, failures, consecutive uint64               // successes, failures, failures in a row
}

type gapKey struct {
	dest  coverage.Destination
	start uint64
}

// New returns the collector; nothing is read until Refresh or Run.
func New(opts Options) (*Metrics, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Metrics{opts: opts, seen: map[gapKey]time.Time{}, sinks: map[string]SinkGaps{}, exported: map[string]SinkGaps{}}, nil
}

// Run refreshes at once and then every Interval until ctx is done, then
// returns nil. Failures are logged and counted, never fatal.
func (g *Metrics) Run(ctx context.Context) error {
	ticker := time.NewTicker(g.opts.Interval)
	defer ticker.Stop()
	for {
		if err := g.Refresh(ctx); err != nil && ctx.Err() == nil {
			g.opts.Logger.Warn("gap metrics refresh failed; the last good values stay exported",
				"table", g.opts.Table.Name(), "err", err, "retry_in", g.opts.Interval.String())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// Refresh reads the table once and replaces the exported values, or, on
// error, counts the failure and keeps them.
func (g *Metrics) Refresh(ctx context.Context) error {
	g.refreshMu.Lock()
	defer g.refreshMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
	defer cancel()
	start := time.Now()
	sinks, err := g.read(ctx)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.lastDur = time.Since(start)
	if err != nil {
		g.failures++
		g.consecutive++
		return fmt.Errorf("gapmetrics: refreshing the gaps of %s: %w", g.opts.Table.Name(), err)
	}
	g.refreshes++
	g.consecutive = 0
	g.sinks, g.lastOK = sinks, g.opts.Now()
	g.exported = capSinks(sinks, g.opts.Reference, g.opts.MaxSinks)
	return nil
}

// OtherSinks labels the series summing the sinks past
// Options.MaxSinks.
const OtherSinks = "(other)"

// capSinks keeps the reference and the max sinks with the most missing
// batches (then by name, so that the choice is stable), and sums the rest
// into OtherSinks.
func capSinks(sinks map[string]SinkGaps, reference string, limit int) map[string]SinkGaps {
	if len(sinks) <= limit+1 {
		return sinks
	}
	names := make([]string, 0, len(sinks))
	for name := range sinks {
		if name != reference {
			names = append(names, name)
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		sa, sb := sinks[a], sinks[b]
		ma, mb := sa.attention(), sb.attention()
		switch {
		case ma > mb:
			return -1
		case ma < mb:
			return 1
		}
		return strings.Compare(a, b)
	})
	out := make(map[string]SinkGaps, limit+2)
	if s, ok := sinks[reference]; ok {
		out[reference] = s
	}
	var other SinkGaps
	for i, name := range names {
		s := sinks[name]
		if i < limit && name != OtherSinks { // a sink of that name is summed, not duplicated
			out[name] = s
			continue
		}
		other.Gaps = coverage.AddSaturating(other.Gaps, s.Gaps)
		other.MissingBatches = coverage.AddSaturating(other.MissingBatches, s.MissingBatches)
		for _, k := range heldKinds {
			other.held(k).add(*s.held(k))
		}
		if !s.OldestSince.IsZero() && (other.OldestSince.IsZero() || s.OldestSince.Before(other.OldestSince)) {
			other.OldestSince = s.OldestSince
		}
	}
	out[OtherSinks] = other
	return out
}

// Sinks returns the values of the last successful refresh, per sink.
func (g *Metrics) Sinks() map[string]SinkGaps {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]SinkGaps, len(g.sinks))
	for k, v := range g.sinks {
		out[k] = v
	}
	return out
}

var gapDescs = map[string]*prometheus.Desc{
	"gaps": prometheus.NewDesc("covmirror_sink_gaps",
		"Gaps of the sink in the durable coverage table: ranges of batches the reference (raw) holds that the sink lacks, by kind: replay (a replay closes them), refused (the sink refuses them), unrecoverable (raw no longer holds them), waived (an operator accepted their loss); for the reference itself, kind verify-reference, holes in its own coverage to verify against raw. As of the last successful gap refresh.",
		[]string{"sink", "kind"}, nil),
	"missing": prometheus.NewDesc("covmirror_sink_missing_batches",
		"Batches in the sink's gaps of the kind (for the reference, in its holes); kind replay is what a replay would send. As of the last successful gap refresh.",
		[]string{"sink", "kind"}, nil),
	"age": prometheus.NewDesc("covmirror_sink_oldest_gap_age_seconds",
		"Age of the sink's oldest gap a replay closes (kind replay; verify-reference for the reference's holes): since the coverage table first showed it, or this process first saw it, whichever is longer; 0 without gaps.",
		[]string{"sink", "kind"}, nil),
	"success": prometheus.NewDesc("covmirror_gap_refresh_last_success_timestamp_seconds",
		"When the gap metrics were last read from the coverage table successfully; absent until then.", nil, nil),
	"refreshes": prometheus.NewDesc("covmirror_gap_refreshes_total",
		"Successful reads of the coverage table for the gap metrics.", nil, nil),
	"failures": prometheus.NewDesc("covmirror_gap_refresh_failures_total",
		"Failed reads of the coverage table for the gap metrics (the catalog or warehouse unreachable, a misspelled reference); the last good values stay exported.", nil, nil),
	"consecutive": prometheus.NewDesc("covmirror_gap_refresh_consecutive_failures",
		"Failed gap refreshes since the last success.", nil, nil),
	"duration": prometheus.NewDesc("covmirror_gap_refresh_duration_seconds",
		"How long the last gap refresh took, failed or not.", nil, nil),
}

// Describe implements prometheus.Collector.
func (g *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range gapDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector. Ages are computed now, so they
// keep growing between refreshes (and while refreshes fail).
func (g *Metrics) Collect(ch chan<- prometheus.Metric) {
	now := g.opts.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(gapDescs[name], prometheus.GaugeValue, v, labels...)
	}
	for sink, s := range g.exported {
		kind := string(recovery.KindReplay)
		if sink == g.opts.Reference {
			kind = string(recovery.KindVerifyReference)
		}
		gauge("gaps", float64(s.Gaps), sink, kind)
		gauge("missing", float64(s.MissingBatches), sink, kind)
		age := 0.0
		if !s.OldestSince.IsZero() {
			age = max(now.Sub(s.OldestSince).Seconds(), 0)
		}
		gauge("age", age, sink, kind)
		if sink == g.opts.Reference {
			continue // no state holds a hole of the reference
		}
		// Zeros too, so that a reopened or covered range clears its
		// series at the next scrape rather than when it goes stale.
		for _, k := range heldKinds {
			h := s.held(k)
			gauge("gaps", float64(h.Gaps), sink, string(k))
			gauge("missing", float64(h.MissingBatches), sink, string(k))
		}
	}
	if !g.lastOK.IsZero() {
		gauge("success", float64(g.lastOK.UnixNano())/1e9)
	}
	ch <- prometheus.MustNewConstMetric(gapDescs["refreshes"], prometheus.CounterValue, float64(g.refreshes))
	ch <- prometheus.MustNewConstMetric(gapDescs["failures"], prometheus.CounterValue, float64(g.failures))
	gauge("consecutive", float64(g.consecutive))
	gauge("duration", g.lastDur.Seconds())
}
