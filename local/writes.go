package local

import (
	"fmt"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/covmirror/covmirror/coverage"
)

// uncommitted holds key writes accepted by Record and not yet committed to
// Pebble, coalesced by key: a run of records extending one range leaves one
// write. Guarded by Store.mu. Everything here is also in the in-memory index,
// which is why readers of the Store never wait for a write.
//
// The write-behind commit (CommitDelay elapsed, Sync off) runs outside
// Store.mu: its ops move to inFlight and Records go on while Pebble writes
// them, so that a slow Pebble commit (a memtable rotation creates a WAL and
// syncs the directory: milliseconds, tens on a slow disk) does not stall
// every Record behind the lock. Every other write waits for it first
// (waitWriteBehindLocked), so batches reach Pebble in the order they were
// staged and a checkpoint's marks are never persisted before the coverage
// they mark.
//
// A failed write keeps everything staged: each record was acknowledged by
// its sink, so the index holding it is true, and nothing else would ever
// write it again (a hole in raw's coverage would hide every other sink's gap
// behind it). The write is retried with capped backoff; Diagnostics shows
// what is unpersisted and the last error.
type uncommitted struct {
	ops   map[string][]byte // key -> value; nil deletes
	since time.Time         // when the oldest op was staged
	armed bool              // a flush timer is pending

	// inFlight holds the ops the write-behind commit is writing, nil when
	// none runs; inFlightSince is when the oldest of them was staged. idle
	// is signalled when it ends.
	inFlight      map[string][]byte
	inFlightSince time.Time
	spare         map[string][]byte // an emptied ops map, reused
	idle          *sync.Cond        // on Store.mu
	// waiters counts writes waiting on idle. While one waits no new
	// write-behind starts: the waiter writes what is staged itself, and
	// Records arriving between each commit's end and the waiter's turn
	// would otherwise keep it waiting for as long as they come.
	waiters int

	failures int       // consecutive failed writes; 0 after a success
	lastErr  error     // the last failed write's error
	lastAt   time.Time // when it failed
}

// Backoff between retries of a failed write: doubling from retryMin to
// retryMax.
const (
	retryMin = 10 * time.Millisecond
	retryMax = 5 * time.Second
)

// stageLocked queues a write of key (a delete when value is nil).
func (s *Store) stageLocked(key, value []byte, now time.Time) {
	if len(s.w.ops) == 0 {
		s.w.since = now
	}
	s.w.ops[string(key)] = value
}

// maybeFlushLocked writes the staged ops now if the options or the bounds
// say so, hands them to the write-behind commit once CommitDelay has
// passed, and otherwise makes sure a timer will. While writes are failing
// only the bound forces a write: Record then returns its error, so the
// caller learns that its records are not persisted (they stay covered in
// memory, and staged).
func (s *Store) maybeFlushLocked(now time.Time) error {
	if s.opts.Sync || len(s.w.ops) >= s.opts.MaxUncommitted || (s.w.failures == 0 && s.opts.CommitDelay < 0) {
		return s.flushLocked()
	}
	if s.w.failures == 0 && now.Sub(s.w.since) >= s.opts.CommitDelay {
		return s.writeBehindLocked()
	}
	s.armLocked()
	return nil
}

// writeBehindLocked starts committing the staged ops outside Store.mu,
// unless a write-behind commit is running: its end arms the timer for what
// was staged meanwhile. It fails only on a failed store, whose error the
// Record that got here returns.
func (s *Store) writeBehindLocked() error {
	if s.w.inFlight != nil || len(s.w.ops) == 0 || s.closed {
		return nil
	}
	if s.w.waiters > 0 {
		s.armLocked() // in case the waiter ends without writing them
		return nil
	}
	if err := s.health.failed(); err != nil {
		return s.commitFailedLocked(len(s.w.ops), err) // counted for Diagnostics; never retried
	}
	b := s.batch
	b.Reset()
	s.addStagedLocked(b)
	s.w.inFlight, s.w.inFlightSince = s.w.ops, s.w.since
	s.w.ops, s.w.spare = s.w.spare, nil
	if s.w.ops == nil {
		s.w.ops = make(map[string][]byte, len(s.w.inFlight))
	}
	go s.commitBehind(b)
	return nil
}

// commitBehind commits b, the in-flight ops, and then settles them under
// Store.mu: written, or staged again beneath what was staged since (the
// newer value of a key wins, as it would have in Pebble).
func (s *Store) commitBehind(b *pebble.Batch) {
	err := s.call(func() error { return s.wal.commit(b, false) })
	s.mu.Lock()
	defer s.mu.Unlock()
	written := s.w.inFlight
	if err == nil {
		s.w.failures, s.w.lastErr = 0, nil
	} else {
		for key, value := range written {
			if _, newer := s.w.ops[key]; !newer {
				s.w.ops[key] = value
			}
		}
		if len(s.w.ops) > 0 && (s.w.since.IsZero() || s.w.inFlightSince.Before(s.w.since)) {
			s.w.since = s.w.inFlightSince
		}
	}
	clear(written)
	s.w.inFlight, s.w.spare = nil, written
	s.w.idle.Broadcast()
	if err != nil {
		_ = s.commitFailedLocked(len(s.w.ops), err) // logged, counted and re-armed there
		return
	}
	s.armLocked()
}

// waitWriteBehindLocked waits until no write-behind commit runs. Every
// other write calls it before it reads the state it writes: Store.mu is
// released while waiting.
func (s *Store) waitWriteBehindLocked() {
	s.w.waiters++
	for s.w.inFlight != nil {
		s.w.idle.Wait()
	}
	s.w.waiters--
}

// armLocked makes sure a timer will write the staged ops: after
// CommitDelay, or after the backoff while writes are failing.
func (s *Store) armLocked() {
	if s.w.armed || len(s.w.ops) == 0 {
		return
	}
	delay := max(s.opts.CommitDelay, 0)
	if s.w.failures > 0 {
		delay = retryMin << min(s.w.failures-1, 20)
		delay = min(delay, retryMax)
	}
	s.w.armed = true
	time.AfterFunc(delay, s.flushFromTimer)
}

func (s *Store) flushFromTimer() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.w.armed = false
	if s.closed {
		return
	}
	// On a failed store this only records the failure for Diagnostics: the
	// staged ops stay, covered in memory, and no retry is armed.
	_ = s.writeBehindLocked() // logged, counted and re-armed there
}

// flushLocked commits the staged ops in one Pebble batch, after the
// write-behind commit if one runs.
func (s *Store) flushLocked() error {
	s.waitWriteBehindLocked()
	if len(s.w.ops) == 0 {
		return nil
	}
	return s.commitStagedLocked(s.batch)
}

// commitStagedLocked commits the staged ops in b, reset first when it is
// the store's reusable batch.
func (s *Store) commitStagedLocked(b *pebble.Batch) error {
	if err := s.health.failed(); err != nil {
		return s.commitFailedLocked(len(s.w.ops), err)
	}
	b.Reset()
	s.addStagedLocked(b)
	return s.commitLocked(b, false)
}

// addStagedLocked adds the staged ops to b. Other writes (a checkpoint's
// marks) go in after them, so that they are persisted together with the
// coverage they depend on and, for a key both touch, win.
func (s *Store) addStagedLocked(b *pebble.Batch) {
	for key, value := range s.w.ops {
		if value == nil {
			_ = b.Delete([]byte(key), nil)
		} else {
			_ = b.Set([]byte(key), value, nil)
		}
	}
}

// commitLocked commits b, which holds the staged ops (addStagedLocked). On
// success they are cleared; on failure they stay staged, the failure is
// counted and logged, and a retry is armed. Once the store has failed, a
// batch may still be in the hands of a Pebble call that call gave up on:
// nothing touches a batch then (releaseBatch), the reusable one included.
func (s *Store) commitLocked(b *pebble.Batch, fsync bool) error {
	staged := len(s.w.ops)
	err := s.call(func() error { return s.wal.commit(b, fsync) })
	if err == nil {
		clear(s.w.ops)
		s.w.failures, s.w.lastErr = 0, nil
		return nil
	}
	return s.commitFailedLocked(staged, err)
}

// commitFailedLocked counts and logs a failed write of staged keys, and arms
// a retry unless the store has failed.
func (s *Store) commitFailedLocked(staged int, err error) error {
	s.w.failures++
	s.w.lastErr, s.w.lastAt = err, s.opts.Now()
	if s.health.failed() == nil {
		err = fmt.Errorf("%w: local store %s: writing %d staged keys (attempt %d; retried with backoff, "+
			"they stay covered in memory): %w", coverage.ErrUnavailable, s.opts.Dir, staged, s.w.failures, err)
		s.armLocked()
	}
	if staged > 0 {
		s.opts.Logger.Error("local store: writing staged records failed; they are kept, not yet persisted",
			"dir", s.opts.Dir, "unpersisted_keys", staged, "attempt", s.w.failures, "err", errString(err))
	}
	return err
}

// releaseBatch closes b unless the store has failed, when an abandoned
// Pebble call may still hold it (commitLocked); it is then left to the
// garbage collector.
func (s *Store) releaseBatch(b *pebble.Batch) {
	if s.health.failed() == nil {
		_ = b.Close()
	}
}
