package local

import (
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/covmirror/covmirror/coverage"
)

// Close writes what is staged, closes the store and releases its directory.
// Closing again returns what the first Close returned, once it has ended: nil
// when the store closed cleanly. Closing a failed store returns its failure;
// if a Pebble goroutine is stopped in it (health.go), that Pebble instance
// and the directory's lock are left to the process's exit.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		// A Close under way releases mu while it waits for a write-behind
		// commit: wait for it to end, so that this answer is its answer.
		done := s.closeDone // set with closed
		s.mu.Unlock()
		<-done
		return s.closeErr // written before done was closed
	}
	s.closed = true
	s.closeDone = make(chan struct{})
	defer close(s.closeDone)
	defer s.mu.Unlock()
	// No db.Flush: the WAL is replayed at Open, and a flush rotates the WAL,
	// where Pebble panics unrecoverably if the disk has failed (watchfs.go).
	if err := errors.Join(s.flushLocked(), s.closePebble(s.lock)); err != nil {
		s.closeErr = fmt.Errorf("local: closing %s: %w", s.opts.Dir, err)
	}
	return s.closeErr
}

// closePebble closes the Pebble instance and then lock, unless a Pebble
// goroutine is parked in Fatalf: it holds Pebble's mutex, so db.Close would
// never return, and the directory stays locked until the process exits.
func (s *Store) closePebble(lock *pebble.Lock) error {
	if s.health.parked.Load() > 0 {
		s.lockKept = true
		return fmt.Errorf("%w; the directory stays locked until this process exits", s.health.failed())
	}
	// Not through call: Close must run even on a failed store, and a panic
	// or Fatalf from a broken instance is recovered all the same. It waits
	// for operations that call gave up on: Pebble must not close under them.
	done := make(chan error, 1)
	go func() {
		s.calls.Wait()
		done <- guarded(s.health, func() error {
			if s.db == nil {
				return nil // Open failed before Pebble opened
			}
			var batchErr error
			if s.batch != nil && s.health.failed() == nil {
				batchErr = s.batch.Close()
			}
			return errors.Join(batchErr, s.db.Close())
		})
	}()
	timeout := time.After(closeWait)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			return errors.Join(s.health.failed(), err, lock.Close())
		case <-tick.C:
			if s.health.parked.Load() > 0 { // it parked while closing
				s.lockKept = true
				return fmt.Errorf("%w; the directory stays locked until this process exits", s.health.failed())
			}
		case <-timeout:
			s.lockKept = true
			return fmt.Errorf("%w: local store %s: Pebble did not close within %s; the directory stays locked until this process exits",
				coverage.ErrUnavailable, s.opts.Dir, closeWait)
		}
	}
}

// closeWait bounds how long Close waits for a Pebble instance that failed.
// It is reached only when Pebble neither finishes nor reports (a disk that
// hangs): a job that fails parks (health.go), which Close notices within
// its 10ms tick and gives up on at once. A variable for the tests.
var closeWait = 10 * time.Second
