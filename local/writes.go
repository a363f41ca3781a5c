package local

import (
	"fmt"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// uncommitted holds key writes accepted by Record and not yet committed to
// Pebble, coalesced by key: a run of records extending one range leaves one
// write. Guarded by Store.mu. Everything here is also in the in-memory index,
// which is why readers of the Store never wait for a write.
type uncommitted struct {
	ops   map[string][]byte                 // key -> value; nil deletes
	dests map[coverage.Destination]struct{} // whose keys are in ops
	since time.Time                         // when the oldest op was staged
	armed bool                              // a flush timer is pending
}

// stageLocked queues a write of key (a delete when value is nil).
func (s *Store) stageLocked(d coverage.Destination, key, value []byte, now time.Time) {
	if len(s.w.ops) == 0 {
		s.w.since = now
	}
	s.w.ops[string(key)] = value
	s.w.dests[d] = struct{}{}
}

// maybeFlushLocked writes the staged ops now if the options or the bounds
// say so, and otherwise makes sure a timer will.
func (s *Store) maybeFlushLocked(now time.Time) error {
	if s.opts.Sync || s.opts.CommitDelay < 0 || len(s.w.ops) >= s.opts.MaxUncommitted || now.Sub(s.w.since) >= s.opts.CommitDelay {
		return s.flushLocked()
	}
	if !s.w.armed {
		s.w.armed = true
		time.AfterFunc(s.opts.CommitDelay, s.flushFromTimer)
	}
	return nil
}

func (s *Store) flushFromTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.armed = false
	if s.closed {
		return
	}
	if err := s.flushLocked(); err != nil {
		s.opts.Logger.Error("local store: writing staged records failed; they were dropped and will be replayed", "dir", s.opts.Dir, "err", err)
	}
}

// flushLocked commits the staged ops in one Pebble batch. If the commit
// fails the staged records are dropped and their destinations reloaded from
// Pebble, so the index never claims what Pebble lacks: coverage lags, which
// costs a replay.
func (s *Store) flushLocked() error {
	if len(s.w.ops) == 0 {
		return nil
	}
	b := s.batch
	b.Reset()
	for key, value := range s.w.ops {
		if value == nil {
			_ = b.Delete([]byte(key), nil)
		} else {
			_ = b.Set([]byte(key), value, nil)
		}
	}
	err := b.Commit(s.writeOpts)
	dests := s.w.dests
	clear(s.w.ops)
	s.w.dests = make(map[coverage.Destination]struct{})
	if err == nil {
		return nil
	}
	for d := range dests {
		if reloadErr := s.reloadLocked(d); reloadErr != nil {
			s.closed = true
			return fmt.Errorf("%w: local store %s: write failed (%v) and reloading %s failed: %w", coverage.ErrCorrupt, s.opts.Dir, err, d, reloadErr)
		}
	}
	return fmt.Errorf("%w: local store %s: writing records: %w", coverage.ErrUnavailable, s.opts.Dir, err)
}
