package mirror

import (
	"sync/atomic"
	"time"

	"github.com/covmirror/covmirror/durable"
)

// Many pods on one durable tier that commits optimistically (the coverage
// table) lose commit attempts to each other. Two things here: a
// Checkpoint that arrives while another runs joins the next one instead
// of queueing a commit of its own (fewer commits on the shared table),
// and the tier's conflicts per checkpoint are counted and warned about
// past Options.ConflictWarnThreshold, naming the remedy.

// coalescing is the Mirror's state for joining checkpoints.
type coalescing struct {
	rounds atomic.Uint64 // checkpoint rounds begun, each numbered from 1

	// Guarded by Mirror.syncTurn.
	lastOK  uint64            // number of the last round that succeeded
	lastSum CheckpointSummary // what it committed
}

// joinable returns the summary of a round that began after a call that
// saw arrived rounds begun, and succeeded while the call waited for
// syncTurn. Such a round carried everything recorded (and every position
// buffered) before the call, so the call may report it as its own: one
// commit for both, nothing reported done that did not land. Called holding
// syncTurn.
func (c *coalescing) joinable(arrived uint64) (CheckpointSummary, bool) {
	if c.lastOK <= arrived {
		return CheckpointSummary{}, false
	}
	sum := c.lastSum
	sum.Joined = true
	return sum, true
}

// conflictWatch counts the durable tier's commit conflicts per checkpoint
// and warns at the end of a window when they passed the threshold in it.
type conflictWatch struct {
	total atomic.Uint64    // covmirror_checkpoint_commit_conflicts_total
	floor time.Duration    // the shortest window; zero: conflictWindowFloor (tests shorten it)
	now   func() time.Time // zero: time.Now (tests step a clock of their own)

	// Guarded by Mirror.syncTurn.
	windowStart       time.Time
	windowCheckpoints uint64
	windowConflicts   uint64
}

// conflictCount is the tier's count of lost commit attempts, or 0 for a
// tier that does not count them.
func (m *Mirror) conflictCount() uint64 {
	if c, ok := m.opts.Durable.(durable.ConflictCounter); ok {
		return c.CommitConflicts()
	}
	return 0
}

// conflictWindow is how often the conflict warning may repeat: once per
// checkpoint interval, and at most once a minute, so that a short
// interval does not turn a sustained condition into a log line a second.
func (m *Mirror) conflictWindow() time.Duration {
	floor := m.conflicts.floor
	if floor == 0 {
		floor = conflictWindowFloor
	}
	return max(m.opts.Interval, floor)
}

const conflictWindowFloor = time.Minute

// noteConflicts adds the conflicts of one checkpoint round (the tier's
// count was before when it began) and, once a window has passed, warns if
// the window's conflicts per checkpoint reached the threshold, then starts
// the next window. A round that committed nothing and failed nothing does
// not count. Called holding syncTurn.
func (m *Mirror) noteConflicts(before uint64, sum CheckpointSummary, err error) {
	w := &m.conflicts
	n := m.conflictCount() - before
	w.total.Add(n)
	if sum.Checkpoints == 0 && err == nil {
		return
	}
	now := time.Now()
	if w.now != nil {
		now = w.now()
	}
	if w.windowStart.IsZero() {
		w.windowStart = now
	}
	w.windowCheckpoints++
	w.windowConflicts += n
	if now.Sub(w.windowStart) < m.conflictWindow() {
		return
	}
	if per := float64(w.windowConflicts) / float64(w.windowCheckpoints); per >= m.opts.ConflictWarnThreshold {
		m.opts.Logger.Warn("commits into the durable tier keep conflicting with other writers: checkpoints slow down and coverage lags further. "+
			"For many pods on one Iceberg table, use the object or PostgreSQL primary with the table as its replica (--durable object|postgres, serve --replicate-every)",
			"tier", m.opts.Durable.Name(), "conflicts_per_checkpoint", per, "threshold", m.opts.ConflictWarnThreshold,
			"checkpoints", w.windowCheckpoints, "since", w.windowStart.Format(time.RFC3339))
	}
	w.windowStart, w.windowCheckpoints, w.windowConflicts = now, 0, 0
}
