package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/covmirror/covmirror/coverage"
)

// formatVersion is this package's on-disk layout (keys.go). A store written
// with another one is refused with ErrIncompatibleFormat.
const formatVersion = "covmirror-local/1"

// Store is the pod-local coverage.Store on Pebble. It is safe for concurrent
// use. Open it with Open; only one Store, in one process, can have a
// directory open at a time.
type Store struct {
	opts   Options
	db     *pebble.DB
	wal    *walSync // every commit goes through it (walsync.go)
	lock   *pebble.Lock
	health *health
	calls  sync.WaitGroup // Pebble operations running under call

	mu sync.RWMutex
	// dests mirrors every kindCovered, kindCheckpointed and kindPendingSince
	// key, plus the staged writes in w (writes.go). It is rebuilt from Pebble
	// on open; Record changes it once the sink's acknowledgement is in hand,
	// checkpoint marks only after their Pebble commit succeeded.
	dests map[coverage.Destination]*destState
	// ordered is dests in destination order, for checkpoints; nil once a
	// destination is added, and rebuilt by the next checkpoint. A pod meets
	// new destinations rarely, so most checkpoints sort nothing.
	ordered  []orderedDest
	batch    *pebble.Batch // reused by flushLocked and the write-behind commit, one at a time
	w        uncommitted
	keyBuf   []byte
	mergeBuf []coverage.Range
	freshBuf []coverage.Range
	ckpt     checkpointState
	// states are the gap states kept here (states.go), by event ID: never
	// coverage. Changed only after their Pebble commit succeeded.
	states map[string]*storedState
	closed bool
	// closeDone is closed when the first Close has ended, which returned
	// closeErr.
	closeDone chan struct{}
	closeErr  error
	lockKept  bool // closePebble left the directory locked (a Pebble goroutine is parked)
}

// destState is one destination's coverage as this pod believes it.
type destState struct {
	covered      coverage.RangeSet // recorded after the sink's ack
	checkpointed coverage.RangeSet // committed to the durable tier; within covered
	// pending is covered minus checkpointed minus inFlight, kept up to date
	// by Record so that a checkpoint never has to compute it.
	pending pendingLog
	// inFlight is this destination's part of the checkpoint in flight.
	inFlight coverage.RangeSet
	// pendingSince is when the oldest record not yet in a committed
	// checkpoint was made; zero when nothing is pending. Persisted.
	pendingSince time.Time
	// recordedSinceBegin is when the first record after the in-flight
	// checkpoint began was made: the pendingSince that remains once that
	// checkpoint commits. In memory only.
	recordedSinceBegin time.Time
}

var _ coverage.Store = (*Store)(nil)

// Open opens the store in opts.Dir, creating it if needed, and rebuilds the
// in-memory index from it. A directory another process holds fails with
// ErrLocked; a corrupt store with coverage.ErrCorrupt and one of another
// format with ErrIncompatibleFormat, both naming the directory and the
// remedy, unless opts.RecoverCorrupt moves it aside and starts empty.
func Open(opts Options) (*Store, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s, err := open(opts)
	if err == nil || !opts.RecoverCorrupt || !(errors.Is(err, coverage.ErrCorrupt) || errors.Is(err, ErrIncompatibleFormat)) {
		return s, err
	}
	aside := fmt.Sprintf("%s.corrupt-%s", opts.Dir, opts.Now().UTC().Format("20060102T150405.000000000"))
	if renameErr := opts.FS.Rename(opts.Dir, aside); renameErr != nil {
		return nil, fmt.Errorf("%w; moving it aside to %s also failed: %w", err, aside, renameErr)
	}
	opts.Logger.Warn("local store unusable: moved aside, starting empty; coverage resumes from the durable checkpoint",
		"dir", opts.Dir, "moved_to", aside, "err", errString(err))
	return open(opts)
}

func open(opts Options) (*Store, error) {
	if err := opts.FS.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, dirError(opts.Dir, "creating it", err)
	}
	lock, err := pebble.LockDirectory(opts.Dir, opts.FS)
	if err != nil {
		if isLockHeld(err) {
			return nil, fmt.Errorf("%w: %s is held by another process or Store (%v); a running pod keeps its "+
				"store open: inspect it through the pod's debug handler (covmirror inspect --url) instead; if a store "+
				"of this process failed and said its directory stays locked, restart the process", ErrLocked, opts.Dir, err)
		}
		return nil, dirError(opts.Dir, "locking it", err)
	}
	h := newHealth(opts.Dir, opts.Logger)
	s := &Store{
		opts:   opts,
		health: h,
		wal:    &walSync{always: opts.Sync},
		dests:  make(map[coverage.Destination]*destState),
		states: make(map[string]*storedState),
		w:      uncommitted{ops: make(map[string][]byte)},
	}
	s.w.idle = sync.NewCond(&s.mu)
	// Open and the verifying load run through call, so that a Pebble that
	// stops (Fatalf) or finds corruption while opening fails Open.
	gate := newCompactionGate()
	err = s.call(func() error {
		popts := &pebble.Options{
			FS:                 watchFS{opts.FS, h, s.wal},
			Lock:               lock,
			FormatMajorVersion: pebble.FormatNewest,
			Logger:             pebbleLogger{opts.Logger, h},
			EventListener:      h.eventListener(),
			// Table stats are loaded on a goroutine that the flush of the
			// replayed WAL starts during Open and that a failed Open does
			// not stop: it would read tables through the closed file cache.
			// They only tune how soon tombstones are compacted away.
			DisableTableStats:           true,
			MemTableSize:                uint64(opts.MemTableBytes),
			MemTableStopWritesThreshold: 4,
		}
		// Compactions wait until the store opened (scheduler.go).
		popts.Experimental.CompactionScheduler = gate
		db, err := pebble.Open(opts.Dir, popts)
		if err != nil {
			return openError(opts.Dir, err)
		}
		s.db = db
		if err := s.load(); err != nil {
			return err
		}
		s.checkInvariantsLocked() // no lock needed yet: nothing else has s
		return nil
	})
	if err == nil {
		err = h.failed() // corruption Pebble found in the background meanwhile
	}
	if err == nil {
		// Only now, so that a store that fails its load is closed without
		// compactions in flight on it either.
		err = s.call(func() error { gate.start(); return nil })
	}
	if err != nil {
		gate.stop() // a failed Open's Pebble, or one closed below, never compacts
		// Pebble is closed and the directory released, unless a Pebble
		// goroutine is parked in the failure (health.go, watchfs.go): that
		// instance cannot be closed, so it keeps the lock.
		_ = s.closePebble(lock) // s.db may still be nil, or being set by a call given up on
		if s.lockKept {
			err = fmt.Errorf("%w; Pebble stopped in a way that cannot be undone, so %s stays locked until this "+
				"process exits: restart the process once the disk is fixed", err, opts.Dir)
		}
		return nil, err
	}
	s.batch = s.db.NewBatch()
	// The lock was handed to Open, so it outlives db.Close: release it then.
	s.lock = lock
	return s, nil
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.opts.Dir }

// Record implements coverage.Store: one Pebble batch deletes the keys of the
// ranges r absorbs and writes the merged range under its start.
func (s *Store) Record(ctx context.Context, d coverage.Destination, r coverage.Range) error {
	if err := coverage.ValidateRecord(d, r); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return coverage.NewError("record", d, r, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.checkDestsLocked(d)
	if err := s.recordableLocked(); err != nil {
		return coverage.NewError("record", d, r, err)
	}
	now := s.opts.Now()
	if err := s.recordLocked(d, r, now); err != nil {
		return err
	}
	// An error here leaves r covered and staged (true: the sink acked it)
	// and tells the caller it is not persisted yet.
	return coverage.NewError("record", d, r, s.maybeFlushLocked(now))
}

// RecordBatch implements coverage.BatchRecorder: every entry is validated,
// then all are merged under one lock and staged for one write, so that a
// request of many records costs one lock and at most one commit.
func (s *Store) RecordBatch(ctx context.Context, entries []coverage.Entry) (int, error) {
	if err := coverage.ValidateEntries(entries); err != nil {
		return 0, err
	}
	if len(entries) == 0 {
		return 0, nil
	}
	first := entries[0]
	if err := ctx.Err(); err != nil {
		return 0, coverage.NewError("record", first.Destination, first.Range, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.checkEntriesLocked(entries)
	if err := s.recordableLocked(); err != nil {
		return 0, coverage.NewError("record", first.Destination, first.Range, err)
	}
	now := s.opts.Now()
	n, recErr := len(entries), error(nil)
	for i, e := range entries {
		if recErr = s.recordLocked(e.Destination, e.Range, now); recErr != nil {
			n = i
			break
		}
	}
	// The entries before a failed one are staged: they count only once
	// written as Record writes them.
	if err := s.maybeFlushLocked(now); err != nil {
		// Every entry is covered and staged, as Record leaves a record
		// whose write failed; but none is recorded as Record's nil promises
		// (with Sync: on disk), so the count is 0 and the caller retries
		// them all. A count of all of them would lead after a crash.
		return 0, coverage.NewError("record", first.Destination, first.Range, err)
	}
	return n, recErr
}

// recordableLocked says why the store takes no records, if it does not.
func (s *Store) recordableLocked() error {
	if s.closed {
		return coverage.ErrClosed
	}
	return s.health.failed()
}

// recordLocked merges r into d's coverage and stages the keys that change.
func (s *Store) recordLocked(d coverage.Destination, r coverage.Range, now time.Time) error {
	st := s.state(d)
	m, err := st.covered.MergeRange(r, s.mergeBuf)
	if err != nil {
		return coverage.NewError("record", d, r, err)
	}
	s.mergeBuf = m.Replaced
	if m.Added == 0 {
		return nil // already covered: nothing to write
	}
	s.freshBuf = m.Fresh(r, s.freshBuf[:0])
	for _, f := range s.freshBuf {
		st.pending.add(f)
	}
	for _, old := range m.Replaced {
		if old.Start != m.Merged.Start {
			s.keyBuf = rangeKey(s.keyBuf[:0], kindCovered, d, old.Start)
			s.stageLocked(s.keyBuf, nil, now)
		}
	}
	s.keyBuf = rangeKey(s.keyBuf[:0], kindCovered, d, m.Merged.Start)
	s.stageLocked(s.keyBuf, encodeUint64(m.Merged.End), now)
	if st.pendingSince.IsZero() {
		s.keyBuf = destinationPrefix(s.keyBuf[:0], kindPendingSince, d)
		s.stageLocked(s.keyBuf, encodeUint64(uint64(now.UnixNano())), now)
		st.pendingSince = now
	}
	if s.ckpt.inFlight != nil && st.recordedSinceBegin.IsZero() {
		st.recordedSinceBegin = now
	}
	return nil
}

// Covered implements coverage.Store.
func (s *Store) Covered(ctx context.Context, d coverage.Destination) (coverage.RangeSet, error) {
	if err := d.Validate(); err != nil {
		return coverage.RangeSet{}, coverage.DestinationError("covered", d, err)
	}
	if err := ctx.Err(); err != nil {
		return coverage.RangeSet{}, coverage.DestinationError("covered", d, err)
	}
	// Clone marks the set shared, a write: take the lock exclusively.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return coverage.RangeSet{}, coverage.DestinationError("covered", d, coverage.ErrClosed)
	}
	if st := s.dests[d]; st != nil {
		return st.covered.Clone(), nil
	}
	return coverage.RangeSet{}, nil
}

// Destinations implements coverage.Store.
func (s *Store) Destinations(ctx context.Context) ([]coverage.Destination, error) {
	if err := ctx.Err(); err != nil {
		return nil, coverage.StoreError("destinations", err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, coverage.StoreError("destinations", coverage.ErrClosed)
	}
	return s.sortedDestinationsLocked(), nil
}

// orderedDest is one entry of Store.ordered.
type orderedDest struct {
	d  coverage.Destination
	st *destState
}

// orderedLocked is every destination in order with its state.
func (s *Store) orderedLocked() []orderedDest {
	if s.ordered == nil {
		s.ordered = make([]orderedDest, 0, len(s.dests))
		for d, st := range s.dests {
			s.ordered = append(s.ordered, orderedDest{d, st})
		}
		slices.SortFunc(s.ordered, func(a, b orderedDest) int { return a.d.Compare(b.d) })
	}
	return s.ordered
}

func (s *Store) sortedDestinationsLocked() []coverage.Destination {
	return slices.SortedFunc(maps.Keys(s.dests), coverage.Destination.Compare)
}
