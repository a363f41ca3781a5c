package local

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/covmirror/covmirror/coverage"
)

// Checkpoint is the delta of pending coverage handed to the durable tier:
// every range recorded locally and not yet in a committed checkpoint, as of
// BeginCheckpoint. Ranges recorded later stay pending for the next one.
type Checkpoint struct {
	// ID numbers the store's checkpoints, from 1. Together with Store it
	// names the checkpoint uniquely; the durable tier keeps that name so a
	// commit of unknown outcome can be looked for.
	ID uint64 `json:"id"`
	// Store is a random name given to the store's directory when it was
	// created: IDs restart in a store recreated after corruption, names don't.
	Store string `json:"store"`
	// Run is a random name given to the store each time it is opened: a
	// name is unique even if a crash, or a disk restored from a copy, took
	// the counter back (see BeginCheckpoint). Empty in a checkpoint begun
	// by an older build.
	Run     string                       `json:"run,omitempty"`
	BegunAt time.Time                    `json:"begun_at"`
	Ranges  []coverage.DestinationRanges `json:"ranges"`
	// Resumed marks a checkpoint begun before the store was last opened and
	// never committed or aborted: the durable tier may already hold it.
	Resumed bool `json:"-"`
}

// Name is the checkpoint's unique name, "store/run/id" ("store/id" for one
// begun by an older build).
func (c *Checkpoint) Name() string {
	if c.Run == "" {
		return c.Store + "/" + strconv.FormatUint(c.ID, 10)
	}
	return c.Store + "/" + c.Run + "/" + strconv.FormatUint(c.ID, 10)
}

// Batches is the number of batches the checkpoint covers.
func (c *Checkpoint) Batches() uint64 {
	var n uint64
	for _, dr := range c.Ranges {
		for _, r := range dr.Ranges {
			n += r.Len()
		}
	}
	return n
}

// checkpointState is the store's checkpoint bookkeeping, guarded by Store.mu.
type checkpointState struct {
	store    string      // the store's random name
	run      string      // this open's random name
	nextID   uint64      // the ID the next checkpoint gets
	lastID   uint64      // the last committed checkpoint; 0 if none
	lastAt   time.Time   // when it was committed
	inFlight *Checkpoint // begun, neither committed nor aborted
	handed   bool        // inFlight was handed out since the store was opened
}

type lastCheckpoint struct {
	ID uint64    `json:"id"`
	At time.Time `json:"at"`
}

const metaStoreName = "store-name"

func (s *Store) loadCheckpointMeta() error {
	c := &s.ckpt
	name, err := s.getMeta(metaStoreName)
	if err != nil {
		return err
	}
	if name == nil {
		name = []byte(rand.Text())
		if err := s.wal.synced(func() error { return s.db.Set(metaKey(metaStoreName), name, pebble.Sync) }); err != nil {
			return fmt.Errorf("%w: local store %s: %w", coverage.ErrUnavailable, s.opts.Dir, err)
		}
	}
	c.store = string(name)
	c.run = rand.Text()[:8] // 40 random bits: names never meet across opens
	c.nextID = 1
	if raw, err := s.getMeta(metaNextCheckpoint); err != nil {
		return err
	} else if raw != nil {
		if c.nextID, err = decodeUint64(raw); err != nil {
			return corruptError(s.opts.Dir, fmt.Errorf("%s: %w", metaNextCheckpoint, err))
		}
	}
	var last lastCheckpoint
	if _, err := s.getMetaJSON(metaLastCheckpoint, &last); err != nil {
		return err
	}
	c.lastID, c.lastAt = last.ID, last.At
	raw, err := s.getMeta(metaOpenCheckpoint)
	if err != nil || raw == nil {
		return err
	}
	open, err := decodeCheckpoint(raw)
	if err != nil {
		return corruptError(s.opts.Dir, fmt.Errorf("%s: %w", metaOpenCheckpoint, err))
	}
	// A checkpoint begun by an older build may hold batches past
	// coverage.MaxBatchEnd: the durable tier refuses those, so they go.
	kept := open.Ranges[:0]
	for _, dr := range open.Ranges {
		set, err := coverage.NewRangeSet(dr.Ranges...)
		if err != nil {
			return corruptError(s.opts.Dir, fmt.Errorf("%s: %w", metaOpenCheckpoint, err))
		}
		if set = s.checkpointable(dr.Destination, set); !set.IsEmpty() {
			kept = append(kept, coverage.DestinationRanges{Destination: dr.Destination, Ranges: set.Ranges()})
		}
	}
	open.Ranges = kept
	open.Resumed = true
	c.inFlight = open
	return nil
}

// BeginCheckpoint hands out everything pending as one checkpoint, or nil when
// nothing is pending. Write the checkpoint to the durable tier, then call
// CommitCheckpoint once that commit has returned success, or AbortCheckpoint
// if it certainly failed. Only one checkpoint is in flight at a time; a
// checkpoint left in flight by a process that stopped is handed out again,
// marked Resumed, by the first BeginCheckpoint after Open.
//
// A name is never handed out twice with different ranges, whatever a crash
// keeps. The begin is written with a sync even when Options.Sync is off
// (once per checkpoint, and it makes every earlier write durable too): a
// name reaches the durable tier only after its checkpoint, its ranges and
// the counter past it are on disk. So after a power loss the store either
// resumes that checkpoint, under its name and with its ranges, for the
// caller to look for by name (Resumed), or never handed it out. The marks
// of CommitCheckpoint and AbortCheckpoint may then be lost with Sync off,
// which only resumes the checkpoint again: found by name, it is marked;
// not found, it is appended. The per-open Run in the name covers what a
// sync cannot: a disk that lost synced writes or was restored from a copy.
func (s *Store) BeginCheckpoint(ctx context.Context) (*Checkpoint, error) {
	if err := ctx.Err(); err != nil {
		return nil, coverage.StoreError("begin checkpoint", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitWriteBehindLocked() // before any state is read: it releases mu
	defer s.checkInvariantsLocked()
	if s.closed {
		return nil, coverage.StoreError("begin checkpoint", coverage.ErrClosed)
	}
	if err := s.health.failed(); err != nil {
		return nil, coverage.StoreError("begin checkpoint", err)
	}
	c := &s.ckpt
	if c.inFlight != nil {
		if c.inFlight.Resumed && !c.handed {
			c.handed = true
			for _, dr := range c.inFlight.Ranges {
				st := s.state(dr.Destination)
				for _, r := range dr.Ranges {
					_ = st.inFlight.Add(r)
				}
				pending := st.pending.set()
				pending = coverage.Gaps(&pending, &st.inFlight)
				st.pending.reset(&pending)
			}
			return cloneCheckpoint(c.inFlight), nil
		}
		return nil, coverage.StoreError("begin checkpoint", fmt.Errorf("%w: %s, begun %s", ErrCheckpointInFlight, c.inFlight.Name(), c.inFlight.BegunAt.Format(time.RFC3339)))
	}
	ranges, sets := s.pendingLocked()
	cp := &Checkpoint{ID: c.nextID, Store: c.store, Run: c.run, BegunAt: s.opts.Now().UTC(), Ranges: ranges}
	if len(cp.Ranges) == 0 {
		return nil, nil
	}
	encoded, err := encodeCheckpoint(cp)
	if err != nil {
		return nil, fmt.Errorf("local: encoding checkpoint %s: %w", cp.Name(), err)
	}
	// The checkpoint's ranges are persisted with it: the staged records go
	// in the same batch.
	b := s.db.NewBatch()
	defer s.releaseBatch(b)
	s.addStagedLocked(b)
	_ = b.Set(metaKey(metaNextCheckpoint), encodeUint64(cp.ID+1), nil)
	_ = b.Set(metaKey(metaOpenCheckpoint), encoded, nil)
	if err := s.commitLocked(b, true); err != nil { // always synced: see above
		return nil, coverage.StoreError("begin checkpoint", err)
	}
	c.nextID = cp.ID + 1
	c.inFlight, c.handed = cp, true
	for _, o := range s.orderedLocked() {
		o.st.recordedSinceBegin = time.Time{}
	}
	for i, dr := range ranges {
		st := s.dests[dr.Destination]
		st.inFlight, st.pending = sets[i], pendingLog{}
	}
	return cloneCheckpoint(cp), nil
}

// pendingLocked is, per destination in order, what is covered and neither
// checkpointed nor in flight; sets[i] is ranges[i]'s as a set.
func (s *Store) pendingLocked() (ranges []coverage.DestinationRanges, sets []coverage.RangeSet) {
	for _, o := range s.orderedLocked() {
		if !o.st.pending.isEmpty() {
			set := o.st.pending.set()
			sets = append(sets, set)
			ranges = append(ranges, coverage.DestinationRanges{Destination: o.d, Ranges: set.Ranges()})
		}
	}
	return ranges, sets
}

// CommitCheckpoint marks cp's ranges checkpointed, atomically and durably.
// Call it only after the durable tier's commit of cp has returned success:
// marking earlier would let this tier claim what the durable one lacks. If
// it fails, cp stays in flight and CommitCheckpoint can be called again.
func (s *Store) CommitCheckpoint(ctx context.Context, cp *Checkpoint) error {
	return s.commitCheckpoint(cp, nil)
}

// CommitLanded ends cp after a durable commit that landed only the
// destinations in landed (durable.PartialError): their ranges are marked
// checkpointed as CommitCheckpoint marks them, and every other
// destination's go back to pending, as AbortCheckpoint leaves them, for
// the next checkpoint. If it fails, cp stays in flight.
func (s *Store) CommitLanded(ctx context.Context, cp *Checkpoint, landed []coverage.Destination) error {
	set := make(map[coverage.Destination]bool, len(landed))
	for _, d := range landed {
		set[d] = true
	}
	return s.commitCheckpoint(cp, set)
}

// commitCheckpoint marks cp's ranges checkpointed, only those of landed's
// destinations unless landed is nil.
func (s *Store) commitCheckpoint(cp *Checkpoint, landed map[coverage.Destination]bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitWriteBehindLocked() // before any state is read: it releases mu
	defer s.checkInvariantsLocked()
	inFlight, err := s.inFlightLocked("commit checkpoint", cp)
	if err != nil {
		return err
	}
	now := s.opts.Now().UTC()
	keys := 0
	for _, dr := range inFlight.Ranges {
		keys += len(dr.Ranges)
	}
	// Room for every key up front: growing a batch of 100,000 keys copies it.
	b := s.db.NewBatchWithSize(64 * (keys + len(s.w.ops) + 4))
	defer s.releaseBatch(b)
	// Records staged since begin go in first: the marks below decide
	// pendingSince from the in-memory state, which includes them.
	s.addStagedLocked(b)
	// What changes in memory once the batch is committed, per destination.
	type mark struct {
		st    *destState
		set   coverage.RangeSet
		since time.Time
	}
	marks := make([]mark, 0, len(inFlight.Ranges))
	var unmarked []*destState // not landed: pending again
	var replaced []coverage.Range
	var value [8]byte
	for _, dr := range inFlight.Ranges {
		d, st := dr.Destination, s.state(dr.Destination)
		if landed != nil && !landed[d] {
			unmarked = append(unmarked, st)
			continue
		}
		set := st.checkpointed.Clone()
		// One encoded prefix per destination; the batch copies each key.
		prefix := destinationPrefix(nil, kindCheckpointed, d)
		key := func(start uint64) []byte {
			return binary.BigEndian.AppendUint64(prefix[:len(prefix):len(prefix)], start)
		}
		for _, r := range dr.Ranges {
			m, err := set.MergeRange(r, replaced)
			if err != nil {
				return coverage.NewError("commit checkpoint", d, r, err)
			}
			replaced = m.Replaced
			for _, old := range m.Replaced {
				if old.Start != m.Merged.Start {
					_ = b.Delete(key(old.Start), nil)
				}
			}
			if m.Added > 0 {
				binary.BigEndian.PutUint64(value[:], m.Merged.End)
				_ = b.Set(key(m.Merged.Start), value[:], nil)
			}
		}
		m := mark{st: st, set: set, since: st.pendingSince}
		if st.pending.isEmpty() {
			m.since = time.Time{}
			_ = b.Delete(destinationPrefix(prefix[:0], kindPendingSince, d), nil)
		} else if !inFlight.Resumed && !st.recordedSinceBegin.IsZero() {
			// Everything pending at begin was in cp: what remains was
			// recorded since.
			m.since = st.recordedSinceBegin
			_ = b.Set(destinationPrefix(prefix[:0], kindPendingSince, d), encodeUint64(uint64(m.since.UnixNano())), nil)
		}
		marks = append(marks, m)
	}
	last, _ := json.Marshal(lastCheckpoint{ID: inFlight.ID, At: now})
	_ = b.Set(metaKey(metaLastCheckpoint), last, nil)
	_ = b.Delete(metaKey(metaOpenCheckpoint), nil)
	if err := s.commitLocked(b, false); err != nil {
		return coverage.StoreError("commit checkpoint", fmt.Errorf("marking %s checkpointed: %w", inFlight.Name(), err))
	}
	for _, m := range marks {
		m.st.checkpointed, m.st.inFlight = m.set, coverage.RangeSet{}
		m.st.pendingSince = m.since
	}
	for _, st := range unmarked { // their pendingSince stays: still pending
		st.pending.addSet(&st.inFlight)
		st.inFlight = coverage.RangeSet{}
	}
	s.ckpt.lastID, s.ckpt.lastAt, s.ckpt.inFlight = inFlight.ID, now, nil
	return nil
}

// AbortCheckpoint drops cp without marking anything: its ranges stay pending
// and the next checkpoint carries them. Call it only when the durable commit
// certainly failed; after an outcome that is unknown, look for cp's name in
// the durable tier first.
func (s *Store) AbortCheckpoint(ctx context.Context, cp *Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitWriteBehindLocked() // before any state is read: it releases mu
	defer s.checkInvariantsLocked()
	if _, err := s.inFlightLocked("abort checkpoint", cp); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer s.releaseBatch(b)
	s.addStagedLocked(b)
	_ = b.Delete(metaKey(metaOpenCheckpoint), nil)
	if err := s.commitLocked(b, false); err != nil {
		return coverage.StoreError("abort checkpoint", err)
	}
	for _, st := range s.dests {
		if !st.inFlight.IsEmpty() {
			st.pending.addSet(&st.inFlight)
			st.inFlight = coverage.RangeSet{}
		}
	}
	s.ckpt.inFlight = nil
	return nil
}

func (s *Store) inFlightLocked(op string, cp *Checkpoint) (*Checkpoint, error) {
	if s.closed {
		return nil, coverage.StoreError(op, coverage.ErrClosed)
	}
	if err := s.health.failed(); err != nil {
		return nil, coverage.StoreError(op, err)
	}
	in := s.ckpt.inFlight
	if cp == nil || in == nil || in.ID != cp.ID || in.Store != cp.Store || in.Run != cp.Run {
		name := "none"
		if in != nil {
			name = in.Name()
		}
		given := "nil"
		if cp != nil {
			given = cp.Name()
		}
		return nil, coverage.StoreError(op, fmt.Errorf("%w: given %s, in flight %s", ErrUnknownCheckpoint, given, name))
	}
	return in, nil
}

func cloneCheckpoint(c *Checkpoint) *Checkpoint {
	out := *c
	out.Ranges = make([]coverage.DestinationRanges, len(c.Ranges))
	for i, dr := range c.Ranges {
		out.Ranges[i] = coverage.DestinationRanges{Destination: dr.Destination, Ranges: append([]coverage.Range(nil), dr.Ranges...)}
	}
	return &out
}
