package local

import (
	"context"
	"fmt"

	"github.com/covmirror/covmirror/coverage"
)

// ReleaseResult is what Release did, each list in destination order.
type ReleaseResult struct {
	// Released are the destinations whose local state was dropped: every
	// range they covered was in a committed checkpoint.
	Released []coverage.Destination `json:"released"`
	// Retained are the destinations of the partitions that were kept,
	// because some of their coverage is in no committed checkpoint yet
	// (pending, or in the checkpoint in flight). Checkpoint and release
	// them again.
	Retained []coverage.Destination `json:"retained"`
}

// ValidatePartitions reports coverage.ErrInvalidDestination for a topic
// name or partition that no destination may have (coverage.Destination's
// rules), naming the first such entry.
func ValidatePartitions(parts []coverage.TopicPartition) error {
	for i, tp := range parts {
		// Any valid sink name: only the topic and partition are checked.
		if err := (coverage.Destination{Sink: coverage.RawSink, Topic: tp.Topic, Partition: tp.Partition}).Validate(); err != nil {
			return fmt.Errorf("partition %d of %d to release: %w", i, len(parts), err)
		}
	}
	return nil
}

// Release drops the local state of parts' destinations, of every sink,
// whose coverage is all in committed checkpoints: the durable tier holds
// it, so this tier is not its only copy. The others are kept and listed as
// Retained: checkpoint first (mirror.Mirror.Release does), then release.
//
// What is pending is read under the lock Record takes, and the keys are
// deleted before it is released, so a record that races the release either
// came first, and keeps its destination (Retained), or comes after, and
// starts its destination afresh. Releasing is not forgetting for good: a
// later record of a released partition re-creates its state, which is
// harmless (it is pending, and checkpointed as any other record).
//
// Batches past coverage.MaxBatchEnd that an older build recorded are in no
// checkpoint; they go with their destination (the durable tier already
// lags on them). If the delete fails, nothing is released and the error
// says so. A kill after the delete's commit returned but before it reached
// the disk leaves the committed ranges in the store: harmless, since the
// durable tier holds them.
func (s *Store) Release(ctx context.Context, parts []coverage.TopicPartition) (ReleaseResult, error) {
	if err := ValidatePartitions(parts); err != nil {
		return ReleaseResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return ReleaseResult{}, coverage.StoreError("release", err)
	}
	want := make(map[coverage.TopicPartition]bool, len(parts))
	for _, tp := range parts {
		want[tp] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitWriteBehindLocked() // before any state is read: it releases mu
	defer s.checkInvariantsLocked()
	if err := s.recordableLocked(); err != nil {
		return ReleaseResult{}, coverage.StoreError("release", err)
	}
	var res ReleaseResult
	for _, o := range s.orderedLocked() {
		if !want[coverage.TopicPartition{Topic: o.d.Topic, Partition: o.d.Partition}] {
			continue
		}
		if allCheckpointed(o.st) {
			res.Released = append(res.Released, o.d)
		} else {
			res.Retained = append(res.Retained, o.d)
		}
	}
	if len(res.Released) == 0 {
		return res, nil
	}
	b := s.db.NewBatch()
	defer s.releaseBatch(b)
	// Staged writes go first, as every commit carries them; the deletes
	// after them win for a key both touch.
	s.addStagedLocked(b)
	var lo, hi []byte
	for _, d := range res.Released {
		for _, kind := range []byte{kindCovered, kindCheckpointed} {
			lo = destinationPrefix(lo[:0], kind, d)
			hi = prefixSuccessor(append(hi[:0], lo...))
			_ = b.DeleteRange(lo, hi, nil)
		}
		_ = b.Delete(destinationPrefix(lo[:0], kindPendingSince, d), nil)
	}
	if err := s.commitLocked(b, false); err != nil {
		return ReleaseResult{}, coverage.StoreError("release", fmt.Errorf("deleting the keys of %d destinations: %w; nothing was released", len(res.Released), err))
	}
	for _, d := range res.Released {
		delete(s.dests, d)
	}
	s.ordered = nil
	s.opts.Logger.Debug("local store: released partitions", "dir", s.opts.Dir,
		"released", len(res.Released), "retained", len(res.Retained))
	return res, nil
}

// allCheckpointed reports whether everything st covers is in a committed
// checkpoint, batches past coverage.MaxBatchEnd aside (never checkpointed).
// Pending and in flight empty say so already; the sets are compared too,
// so that a slip in their bookkeeping keeps a destination rather than
// dropping coverage the durable tier lacks.
func allCheckpointed(st *destState) bool {
	if !st.pending.isEmpty() || !st.inFlight.IsEmpty() {
		return false
	}
	rest := coverage.Gaps(&st.covered, &st.checkpointed)
	first, ok := rest.First()
	return !ok || first.Start >= coverage.MaxBatchEnd
}

// prefixSuccessor turns p into the smallest key greater than every key p
// is a prefix of, in place. p starts with a kind byte below 0xFF, so some
// byte can always be incremented.
func prefixSuccessor(p []byte) []byte {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] < 0xFF {
			p[i]++
			return p[:i+1]
		}
	}
	return p // unreachable for this package's keys
}
