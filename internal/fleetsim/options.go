package fleetsim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/covmirror/covmirror/durable"
)

// Options configures Run. Every zero value but OpenTier's is a documented
// default; EnsureDefaults fills them in and Validate checks the result.
type Options struct {
	// OpenTier opens pod's handle on the durable tier under test, as that
	// pod's process would (pods from 0; -1 is the reader of the final
	// check, as a rebalancing owner opens one). It may hand several pods
	// one handle where the tier shares a pool. Required.
	OpenTier func(ctx context.Context, pod int) (durable.Tier, error)

	// Compactor, when set, is one logical process's job over the tier
	// (a fold of checkpoint objects, a replication), run every
	// CompactEvery while the pods run, and once more after they have
	// drained, before the final check. Its failures while pods run are
	// counted; the last run must succeed. Zero value: none.
	Compactor func(ctx context.Context) error
	// CompactEvery is the compactor's interval. Zero value: 10 Intervals.
	CompactEvery time.Duration

	// Pods is how many pods checkpoint. Zero value: DefaultPods.
	Pods int
	// RealPods of the Pods are a mirror.Mirror over a local.Store on
	// Pebble's in-memory file system; the others call the tier's Append
	// with the checkpoint a Mirror would send. Zero value:
	// DefaultRealPods (fewer when there are fewer pods); negative: none.
	RealPods int

	// Topics, PartitionsPerTopic and Sinks shape the fleet's destinations:
	// every partition of every topic in every sink, the first sink raw.
	// Zero values: DefaultTopics, DefaultPartitionsPerTopic, DefaultSinks.
	Topics, PartitionsPerTopic, Sinks int
	// PartitionsPerPod is how many partitions each pod owns, pod i the
	// i-th share. Zero value: all partitions over Pods (a pod-count
	// baseline sets the share a full fleet's pod owns).
	PartitionsPerPod int

	// Interval is the pods' checkpoint interval. Zero value: one second.
	Interval time.Duration
	// Rounds is how many Intervals the pods run; a tick missed while a
	// checkpoint runs is skipped, and the next checkpoint carries what
	// accrued. Zero value: DefaultRounds.
	Rounds int
	// Batches is the mean number of batches per partition per Interval:
	// each interval draws from 1 to 2*Batches-1. Zero value:
	// DefaultBatches.
	Batches int
	// SinkFailure is the chance that a sink other than raw fails a batch,
	// which is then never recorded there: a gap. Zero value:
	// DefaultSinkFailure; negative: none.
	SinkFailure float64

	// DrainAttempts bounds the checkpoints each pod runs, one pod at a
	// time, after the rounds, to land what failed checkpoints left
	// pending. Zero value: DefaultDrainAttempts.
	DrainAttempts int

	// Seed fixes every pod's batches, failures and phase.
	Seed uint64

	// Stats, when set, samples the tier's counters; Run reports what the
	// rounds added.
	Stats func() Counters

	// Extra, when set, samples figures of the scenario's own (the table
	// commits of a committer, say) when the rounds end, into Result.Extra.
	Extra func() map[string]float64

	// Logger receives a line per phase. Zero value: discard.
	Logger *slog.Logger
}

// Options' defaults: the fleet of docs/scale.md.
const (
	DefaultPods               = 500
	DefaultRealPods           = 2
	DefaultTopics             = 200
	DefaultPartitionsPerTopic = 500
	DefaultSinks              = 5
	DefaultRounds             = 10
	DefaultBatches            = 3
	DefaultSinkFailure        = 0.01
	DefaultDrainAttempts      = 20
)

// EnsureDefaults fills in zero values.
func (o *Options) EnsureDefaults() {
	if o.Pods == 0 {
		o.Pods = DefaultPods
	}
	if o.RealPods == 0 {
		o.RealPods = min(DefaultRealPods, o.Pods)
	}
	if o.RealPods < 0 {
		o.RealPods = 0
	}
	if o.Topics == 0 {
		o.Topics = DefaultTopics
	}
	if o.PartitionsPerTopic == 0 {
		o.PartitionsPerTopic = DefaultPartitionsPerTopic
	}
	if o.Sinks == 0 {
		o.Sinks = DefaultSinks
	}
	if o.PartitionsPerPod == 0 && o.Pods > 0 {
		o.PartitionsPerPod = max(1, o.Topics*o.PartitionsPerTopic/o.Pods)
	}
	if o.Interval == 0 {
		o.Interval = time.Second
	}
	if o.CompactEvery == 0 {
		o.CompactEvery = 10 * o.Interval
	}
	if o.Rounds == 0 {
		o.Rounds = DefaultRounds
	}
	if o.Batches == 0 {
		o.Batches = DefaultBatches
	}
	if o.SinkFailure == 0 {
		o.SinkFailure = DefaultSinkFailure
	}
	if o.SinkFailure < 0 {
		o.SinkFailure = 0
	}
	if o.DrainAttempts == 0 {
		o.DrainAttempts = DefaultDrainAttempts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports options Run cannot work with.
func (o *Options) Validate() error {
	switch {
	case o.OpenTier == nil:
		return errors.New("fleetsim: Options.OpenTier is nil: give the tier under test")
	case o.Pods < 1 || o.RealPods > o.Pods:
		return fmt.Errorf("fleetsim: Options.Pods %d and RealPods %d: need 1 <= RealPods <= Pods", o.Pods, o.RealPods)
	case o.Topics < 1 || o.PartitionsPerTopic < 1 || o.Sinks < 1 || o.PartitionsPerPod < 1:
		return fmt.Errorf("fleetsim: Options.Topics %d, PartitionsPerTopic %d, Sinks %d and PartitionsPerPod %d must be positive",
			o.Topics, o.PartitionsPerTopic, o.Sinks, o.PartitionsPerPod)
	case o.Pods*o.PartitionsPerPod > o.Topics*o.PartitionsPerTopic:
		return fmt.Errorf("fleetsim: %d pods of %d partitions each own more than the %d partitions there are",
			o.Pods, o.PartitionsPerPod, o.Topics*o.PartitionsPerTopic)
	case o.Interval < 0 || o.CompactEvery < 0 || o.Rounds < 1 || o.Batches < 1 || o.DrainAttempts < 1:
		return errors.New("fleetsim: Options.Interval and CompactEvery must not be negative, Rounds, Batches and DrainAttempts must be positive")
	case o.SinkFailure >= 1:
		return fmt.Errorf("fleetsim: Options.SinkFailure %v: a chance below 1", o.SinkFailure)
	}
	return nil
}

// Counters are a tier's running totals, as Options.Stats samples them.
type Counters struct {
	// Requests are the tier's requests to its store (an S3 request, a
	// commit attempt).
	Requests int64
	// BytesWritten and BytesRead are what those requests carried.
	BytesWritten, BytesRead int64
	// LostRaces are writes refused because another writer wrote first:
	// 412s on S3, commit conflicts on the table.
	LostRaces int64
	// Retained is what the tier holds now: objects, or snapshots.
	Retained int64
	// Window is the mean read-to-write window of one conditional update
	// of one key (a Get and a Put; a commit): what one serialized key
	// allows is 1/Window updates a second.
	Window time.Duration
}

// sub is c minus an earlier o, with c's Retained and Window.
func (c Counters) sub(o Counters) Counters {
	return Counters{Requests: c.Requests - o.Requests, BytesWritten: c.BytesWritten - o.BytesWritten,
		BytesRead: c.BytesRead - o.BytesRead, LostRaces: c.LostRaces - o.LostRaces, Retained: c.Retained, Window: c.Window}
}

// S3Counters samples s for Options.Stats. The window is over every Get
// and Put since the sample before, not since NewS3.
func S3Counters(s *S3) func() Counters {
	var last S3Stats
	return func() Counters {
		st := s.Stats()
		w := st.Sub(last).Window()
		last = st
		return Counters{Requests: st.Requests(), BytesWritten: st.BytesIn, BytesRead: st.BytesOut,
			LostRaces: st.Preconditions, Retained: int64(s.Objects()), Window: w}
	}
}

// CatalogCounters samples c for Options.Stats: a commit attempt is a
// request, a snapshot is retained (the simulation expires none).
func CatalogCounters(c *Catalog) func() Counters {
	return func() Counters {
		return Counters{Requests: int64(c.Commits() + c.CommitConflicts()), LostRaces: int64(c.CommitConflicts()),
			Retained: int64(c.Commits()), Window: c.Window()}
	}
}
