package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/local"
)

// Options configures New. Zero values are documented defaults.
type Options struct {
	// Local is the pod-local tier. Required; the Mirror closes it on Close.
	Local *local.Store
	// Durable is the durable tier checkpoints land in: the coverage table
	// in raw's catalog (iceberg.Open), a sink object per sink
	// (object.Open), or another durable.Tier. Required.
	Durable durable.Tier
	// Writer names this pod in the table's rows and snapshot summaries.
	// Required: a pod name, a hostname.
	Writer string
	// Interval is the checkpoint interval: the knob of docs/design.md. Losing the
	// pod replays at most about this much per sink. Zero value:
	// DefaultInterval.
	Interval time.Duration
	// MaxBackoff caps the wait between failed checkpoints; failures back
	// off exponentially from Interval/10. Zero value: DefaultMaxBackoff.
	MaxBackoff time.Duration
	// ExpireEvery runs snapshot expiry after every this many successful
	// checkpoints, so that commit latency stays flat as checkpoints
	// accumulate. Zero value: DefaultExpireEvery. Negative: never (a
	// scheduled compaction job expires instead).
	ExpireEvery int
	// Expire says which snapshots expiry removes, passed as it is to the
	// durable tier. Zero value: durable.ExpireOptions' own defaults (older
	// than 15 minutes, keeping the last 20).
	Expire durable.ExpireOptions
	// Positions stores source positions of stored (brokerless) sources,
	// saved by Sync after each checkpoint's coverage commit (see
	// SavePosition); iceberg.OpenPositions gives the durable one. The
	// caller closes it after Close. Zero value: none, and SavePosition
	// fails.
	Positions coverage.PositionStore
	// ConflictWarnThreshold is the commit conflicts per checkpoint (commit
	// attempts into the durable tier lost to other writers, averaged over
	// a window of the interval and at least a minute) at which the Mirror
	// logs a warning naming the remedy, once per window. Zero value:
	// DefaultConflictWarnThreshold. Only tiers that count conflicts
	// (durable.ConflictCounter: the coverage table) can pass it.
	ConflictWarnThreshold float64
	// Logger receives checkpoint failures and recoveries. Zero value:
	// discard.
	Logger *slog.Logger
}

// Options' defaults.
const (
	DefaultInterval    = 30 * time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	DefaultExpireEvery = 20
	// DefaultConflictWarnThreshold: one lost commit attempt per checkpoint
	// on average. BenchmarkPodsOneTable measured 0.75 per checkpoint for 4
	// pods checkpointing every second on one table (keeping up), 1.4 to
	// 1.75 for 8 and 2.2 for 16 (both falling behind).
	DefaultConflictWarnThreshold = 1.0
)

// EnsureDefaults fills in zero values.
func (o *Options) EnsureDefaults() {
	if o.Interval == 0 {
		o.Interval = DefaultInterval
	}
	if o.MaxBackoff == 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.ExpireEvery == 0 {
		o.ExpireEvery = DefaultExpireEvery
	}
	if o.ConflictWarnThreshold == 0 {
		o.ConflictWarnThreshold = DefaultConflictWarnThreshold
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports unusable options.
func (o *Options) Validate() error {
	switch {
	case o.Local == nil:
		return errors.New("mirror: Options.Local is nil: open the pod-local tier with local.Open")
	case o.Durable == nil:
		return errors.New("mirror: Options.Durable is nil: open the durable tier (iceberg.Open, object.Open)")
	case o.Writer == "":
		return errors.New("mirror: Options.Writer is empty: name this pod (its hostname, say)")
	case o.Interval < 0 || o.MaxBackoff < 0:
		return errors.New("mirror: Options.Interval and MaxBackoff must not be negative")
	case !(o.ConflictWarnThreshold >= 0) || math.IsInf(o.ConflictWarnThreshold, 0):
		return errors.New("mirror: Options.ConflictWarnThreshold must be a positive number of conflicts per checkpoint (zero: the default)")
	}
	if err := o.Expire.Validate(); err != nil {
		return fmt.Errorf("mirror: Options.Expire: %w", err)
	}
	return nil
}

// Mirror ties the tiers together: Record goes to the local tier, Sync
// checkpoints what is pending into the durable tier, Run does that on an
// interval. Safe for concurrent use.
type Mirror struct {
	opts  Options
	stats stats

	syncTurn  chan struct{}     // holds a token while a checkpoint runs: one at a time
	inFlight  *local.Checkpoint // begun and not resolved; guarded by syncTurn
	coalesce  coalescing        // checkpoints that arrive while one runs join the next
	conflicts conflictWatch     // the durable tier's commit conflicts per checkpoint

	positions positionBuffer // newest position per (source, partition), saved by Sync

	statesTurn chan struct{} // holds a token while gap states are shipped (states.go)
}

var _ coverage.Store = (*Mirror)(nil)

// New returns a Mirror over the two tiers.
func New(opts Options) (*Mirror, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Mirror{opts: opts, syncTurn: make(chan struct{}, 1), statesTurn: make(chan struct{}, 1)}, nil
}

// Record records r for d in the local tier. Call it only after the sink's
// durable acknowledgement; coverage.WriteThenRecord does exactly that.
func (m *Mirror) Record(ctx context.Context, d coverage.Destination, r coverage.Range) error {
	if err := coverage.ValidateRecord(d, r); err != nil {
		return err
	}
	if err := m.opts.Local.Record(ctx, d, r); err != nil {
		return err
	}
	m.stats.records.Add(1)
	return nil
}

// RecordBatch records entries in the local tier under one lock and one
// write (coverage.BatchRecorder): the path for a request of many records.
// Every entry is validated before any is recorded. As for Record, call it
// only after the sink's durable acknowledgement of every entry.
func (m *Mirror) RecordBatch(ctx context.Context, entries []coverage.Entry) (int, error) {
	n, err := coverage.RecordAll(ctx, m.opts.Local, entries)
	m.stats.records.Add(uint64(n))
	return n, err
}

// Covered returns this pod's local view of d's coverage. Other nodes never
// read it: a rebalancing owner uses recovery.Resume, the recovery worker
// recovery.Plan.
func (m *Mirror) Covered(ctx context.Context, d coverage.Destination) (coverage.RangeSet, error) {
	return m.opts.Local.Covered(ctx, d)
}

// Destinations lists the destinations this pod has recorded.
func (m *Mirror) Destinations(ctx context.Context) ([]coverage.Destination, error) {
	return m.opts.Local.Destinations(ctx)
}

// Sync runs one checkpoint now: it resolves a checkpoint left in flight (by
// a failed Sync or a stopped process), then appends everything pending to
// the durable tier and, only once that commit has returned success, marks
// it checkpointed in the local tier. On error everything not committed
// stays pending and the next Sync carries it.
//
// Buffered source positions (SavePosition) are saved after the coverage
// commit, so that a position is never durable before the raw coverage
// checkpointed with it; a failed save keeps them buffered for the next Sync.
// A position store in the durable tier's own database (package postgres)
// saves them in the checkpoint's own transaction instead.
//
// Gap states the local tier keeps and the durable tier does not hold yet
// (RecordStates) are appended to it too, and marked shipped only once a
// read of the durable tier shows them.
func (m *Mirror) Sync(ctx context.Context) error {
	_, err := m.Checkpoint(ctx)
	return err
}

// CheckpointSummary is what one Checkpoint committed.
type CheckpointSummary struct {
	// Checkpoints is the number of commits into the durable tier (zero:
	// nothing was pending; more than one: a leftover was resolved first).
	Checkpoints int `json:"checkpoints"`
	// Batches is the number of batches those commits carried (saturating
	// at the largest uint64).
	Batches uint64 `json:"batches"`
	// Destinations is the number of distinct destinations they carried.
	Destinations int `json:"destinations"`
	// Positions is the number of buffered source positions saved.
	Positions int `json:"positions"`
	// States is the number of gap states the local tier kept that were
	// appended to the durable tier (and read back there).
	States int `json:"states,omitempty"`
	// Duration is how long the checkpoint took.
	Duration time.Duration `json:"duration_ns"`
	// Joined says this call committed nothing of its own: it arrived while
	// another checkpoint ran and the next one, which began after it
	// arrived and so carried everything recorded before it, landed while
	// it waited. The other fields are that checkpoint's.
	Joined bool `json:"joined,omitempty"`
}

// Checkpoint is Sync, returning what it committed. On error the summary
// holds what was committed before the failure.
//
// Calls that arrive while a checkpoint runs do not queue a commit each:
// the first to run after it commits for all of them (everything pending,
// theirs included), and the others return its summary, marked Joined.
// A call is never reported done by a checkpoint that began before it.
// A call whose ctx ends while it waits returns ctx's error at once: it
// committed nothing, and what it recorded stays pending.
func (m *Mirror) Checkpoint(ctx context.Context) (CheckpointSummary, error) {
	arrived := m.coalesce.rounds.Load()
	// Waiting ends with ctx: the checkpoint running can take CommitTimeout
	// and more on a contended table, and a caller gone (an HTTP client, a
	// shutdown's deadline) must not stay parked behind it.
	select {
	case m.syncTurn <- struct{}{}:
	case <-ctx.Done():
		return CheckpointSummary{}, fmt.Errorf("mirror: checkpoint of %s into %s: waiting for the checkpoint running: %w; what is pending stays pending",
			m.opts.Local.Dir(), m.opts.Durable.Name(), ctx.Err())
	}
	defer func() { <-m.syncTurn }()
	if sum, ok := m.coalesce.joinable(arrived); ok {
		m.stats.joined.Add(1)
		return sum, nil
	}
	round := m.coalesce.rounds.Add(1)
	start := time.Now()
	conflictsBefore := m.conflictCount()
	var sum CheckpointSummary
	err := m.sync(ctx, &sum)
	if err == nil {
		var saved int
		saved, err = m.flushPositions(ctx)
		sum.Positions += saved
		if saved > 0 {
			m.stats.reached()
		}
	}
	// Gap states ship whatever became of the coverage: they are no
	// coverage, and a durable tier refusing this checkpoint may take them.
	shipped, shipErr := m.shipStates(ctx)
	sum.States = shipped
	if errors.Is(shipErr, durable.ErrNoStates) {
		// Kept by an earlier run over another tier: they wait here, and
		// the coverage checkpoints must not stall on them.
		m.opts.Logger.Warn("the local tier holds gap states this durable tier cannot keep; they stay pending", "durable", m.opts.Durable.Name(), "err", shipErr)
		shipErr = nil
	}
	if errors.Is(shipErr, errOtherCopy) {
		m.opts.Logger.Warn("gap states the durable tier will not take: it holds other events of their IDs; they stay pending", "durable", m.opts.Durable.Name(), "err", shipErr)
		shipErr = nil
	}
	err = errors.Join(err, shipErr)
	m.stats.observe(start, err)
	sum.Duration = time.Since(start)
	m.noteConflicts(conflictsBefore, sum, err)
	if err != nil {
		return sum, fmt.Errorf("mirror: checkpoint of %s into %s: %w", m.opts.Local.Dir(), m.opts.Durable.Name(), err)
	}
	m.coalesce.lastOK, m.coalesce.lastSum = round, sum
	return sum, nil
}

func (m *Mirror) sync(ctx context.Context, sum *CheckpointSummary) error {
	dests := map[coverage.Destination]struct{}{}
	for {
		cp, leftover := m.inFlight, m.inFlight != nil
		if cp == nil {
			var err error
			if cp, err = m.opts.Local.BeginCheckpoint(ctx); err != nil || cp == nil {
				return err
			}
			leftover = cp.Resumed
			m.inFlight = cp
		}
		// A leftover is looked for by name first, so one whose commit did
		// land is not appended twice.
		commit := durable.Checkpoint{Name: cp.Name(), Writer: m.opts.Writer, Ranges: cp.Ranges, MayHaveLanded: leftover}
		appendStart := time.Now()
		err := m.appendCheckpoint(ctx, commit, sum)
		m.stats.commitTimed("durable", appendStart)
		if err != nil {
			var partial *durable.PartialError
			if !errors.As(err, &partial) {
				return err // cp stays in flight and pending
			}
			// Some destinations landed, the others certainly not: mark
			// those, and the rest goes to the next checkpoint.
			if lerr := m.opts.Local.CommitLanded(ctx, cp, partial.Landed); lerr != nil {
				return errors.Join(err, lerr) // cp stays in flight: its retry finds what landed
			}
			m.inFlight = nil
			return err
		}
		m.stats.reached()
		localStart := time.Now()
		err = m.opts.Local.CommitCheckpoint(ctx, cp)
		m.stats.commitTimed("local", localStart)
		if err != nil {
			return err // the durable tier holds cp; marking it is retried next time
		}
		m.inFlight = nil
		n := m.stats.checkpoints.Add(1)
		m.stats.checkpointedBatches.Add(cp.Batches())
		sum.Checkpoints++
		sum.Batches = coverage.AddSaturating(sum.Batches, cp.Batches())
		for _, dr := range cp.Ranges {
			dests[dr.Destination] = struct{}{}
		}
		sum.Destinations = len(dests)
		if every := m.opts.ExpireEvery; every > 0 && n%uint64(every) == 0 {
			m.expire(ctx)
		}
		if !leftover {
			return nil
		}
		// A leftover predates what was recorded since: one more round.
	}
}

// expire runs snapshot expiry where the tier has snapshots; a failure is
// only logged, since the checkpoint itself landed and the next expiry
// covers the same snapshots.
func (m *Mirror) expire(ctx context.Context) {
	se, ok := m.opts.Durable.(durable.Expirer)
	if !ok {
		return
	}
	expired, err := se.ExpireSnapshots(ctx, m.opts.Expire)
	if err != nil {
		m.opts.Logger.Warn("snapshot expiry failed; it is retried after the next checkpoints", "table", m.opts.Durable.Name(), "err", err)
		return
	}
	m.opts.Logger.Debug("snapshots expired", "table", m.opts.Durable.Name(), "expired", expired)
}

// Close runs a final checkpoint and closes the local tier. The final
// checkpoint's error, if any, is returned with the close's; what it could
// not checkpoint stays in the local tier for the next run.
func (m *Mirror) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	syncErr := m.Sync(ctx)
	return errors.Join(syncErr, m.opts.Local.Close())
}

// Writer is the name this pod writes under (Options.Writer).
func (m *Mirror) Writer() string { return m.opts.Writer }
