package local

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/covmirror/covmirror/coverage"
)

// formatVersion is this package's on-disk layout (keys.go). A store written
// with another one is refused with ErrIncompatibleFormat.
const formatVersion = "covmirror-local/1"

// Store is the pod-local coverage.Store on Pebble. It is safe for concurrent
// use. Open it with Open; only one Store, in one process, can have a
// directory open at a time.
type Store struct {
	opts        Options
	db          *pebble.DB
	writeOpts   *pebble.WriteOptions
	releaseLock func() error

	mu sync.RWMutex
	// dests mirrors every kindCovered, kindCheckpointed and kindPendingSince
	// key. It is rebuilt from Pebble on open, changed only after a Pebble
	// commit succeeded, and reloaded from Pebble when one fails.
	dests    map[coverage.Destination]*destState
	batch    *pebble.Batch // reused by flushLocked under mu
	w        uncommitted
	keyBuf   []byte
	mergeBuf []coverage.Range
	freshBuf []coverage.Range
	ckpt     checkpointState
	closed   bool
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
	if renameErr := os.Rename(opts.Dir, aside); renameErr != nil {
		return nil, fmt.Errorf("%w; moving it aside to %s also failed: %w", err, aside, renameErr)
	}
	opts.Logger.Warn("local store unusable: moved aside, starting empty; coverage resumes from the durable checkpoint",
		"dir", opts.Dir, "moved_to", aside, "err", err)
	return open(opts)
}

func open(opts Options) (*Store, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: local store %s: %w", coverage.ErrUnavailable, opts.Dir, err)
	}
	lock, err := pebble.LockDirectory(opts.Dir, vfs.Default)
	if err != nil {
		return nil, fmt.Errorf("%w: %s is held by another process or Store (%v); a running pod keeps its "+
			"store open: inspect it through the pod's debug handler (covmirror inspect --url) instead", ErrLocked, opts.Dir, err)
	}
	db, err := pebble.Open(opts.Dir, &pebble.Options{
		Lock:               lock,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             pebbleLogger{opts.Logger},
	})
	if err != nil {
		_ = lock.Close()
		if errors.Is(err, os.ErrPermission) {
			return nil, fmt.Errorf("%w: local store %s: %w", coverage.ErrUnavailable, opts.Dir, err)
		}
		return nil, corruptError(opts.Dir, err)
	}
	s := &Store{
		opts:      opts,
		db:        db,
		writeOpts: pebble.NoSync,
		dests:     make(map[coverage.Destination]*destState),
		batch:     db.NewBatch(),
		w:         uncommitted{ops: make(map[string][]byte), dests: make(map[coverage.Destination]struct{})},
	}
	if opts.Sync {
		s.writeOpts = pebble.Sync
	}
	if err := s.load(); err != nil {
		_ = s.batch.Close()
		_ = db.Close()
		_ = lock.Close()
		return nil, err
	}
	// The lock was handed to Open, so it outlives db.Close: release it then.
	s.releaseLock = lock.Close
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
	if s.closed {
		return coverage.NewError("record", d, r, coverage.ErrClosed)
	}
	st := s.dests[d]
	if st == nil {
		st = &destState{}
		s.dests[d] = st
	}
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
	now := s.opts.Now()
	for _, old := range m.Replaced {
		if old.Start != m.Merged.Start {
			s.keyBuf = rangeKey(s.keyBuf[:0], kindCovered, d, old.Start)
			s.stageLocked(d, s.keyBuf, nil, now)
		}
	}
	s.keyBuf = rangeKey(s.keyBuf[:0], kindCovered, d, m.Merged.Start)
	s.stageLocked(d, s.keyBuf, encodeUint64(m.Merged.End), now)
	startsPending := st.pendingSince.IsZero()
	if startsPending {
		s.keyBuf = destinationPrefix(s.keyBuf[:0], kindPendingSince, d)
		s.stageLocked(d, s.keyBuf, encodeUint64(uint64(now.UnixNano())), now)
	}
	if err := s.maybeFlushLocked(now); err != nil {
		return coverage.NewError("record", d, r, err)
	}
	if startsPending {
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
		return coverage.RangeSet{}, coverage.NewError("covered", d, coverage.Range{}, err)
	}
	if err := ctx.Err(); err != nil {
		return coverage.RangeSet{}, coverage.NewError("covered", d, coverage.Range{}, err)
	}
	// Clone marks the set shared, a write: take the lock exclusively.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return coverage.RangeSet{}, coverage.NewError("covered", d, coverage.Range{}, coverage.ErrClosed)
	}
	if st := s.dests[d]; st != nil {
		return st.covered.Clone(), nil
	}
	return coverage.RangeSet{}, nil
}

// Destinations implements coverage.Store.
func (s *Store) Destinations(ctx context.Context) ([]coverage.Destination, error) {
	if err := ctx.Err(); err != nil {
		return nil, coverage.NewError("destinations", coverage.Destination{}, coverage.Range{}, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, coverage.NewError("destinations", coverage.Destination{}, coverage.Range{}, coverage.ErrClosed)
	}
	return s.sortedDestinationsLocked(), nil
}

func (s *Store) sortedDestinationsLocked() []coverage.Destination {
	return slices.SortedFunc(maps.Keys(s.dests), coverage.Destination.Compare)
}

// Close flushes and closes the store and releases its directory. Closing
// twice is not an error.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	s.closed = true
	err := errors.Join(s.flushLocked(), s.batch.Close(), s.db.Flush(), s.db.Close())
	if s.releaseLock != nil {
		err = errors.Join(err, s.releaseLock())
	}
	s.db = nil
	if err != nil {
		return fmt.Errorf("local: closing %s: %w", s.opts.Dir, err)
	}
	return nil
}

// pebbleLogger routes Pebble's logs to the injected logger. Fatalf must not
// return, so it panics rather than exiting the process.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) { p.l.Debug(fmt.Sprintf(format, args...)) }

func (p pebbleLogger) Errorf(format string, args ...any) { p.l.Error(fmt.Sprintf(format, args...)) }

func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg)
	panic("pebble: " + msg)
}
