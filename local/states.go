package local

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
)

// Gap states (package gapstate) are kept here as coverage is: a
// write-behind buffer of what the durable tier will hold. They are a set of
// events keyed by event ID under kindState, apart from every coverage key,
// so no state is ever read as coverage. An event is pending until the
// checkpoint appended it to the durable tier and read it back there
// (MarkStatesShipped); a shipped one stays, for inspection.
//
// An older build of this format ignores the kind: it neither loads nor
// drops the keys.

// kindState keys are kindState id -> storedState JSON.
const kindState byte = 0x20

// storedState is an event and whether the durable tier holds it.
type storedState struct {
	Event   gapstate.Event `json:"event"`
	Shipped bool           `json:"shipped,omitempty"`
}

// StateDiagnostics is one gap state of Diagnostics.States.
type StateDiagnostics struct {
	gapstate.Event
	// Shipped says the durable tier holds the event; false: it is pending,
	// appended by the next checkpoint.
	Shipped bool `json:"shipped"`
}

func stateKey(id string) []byte { return append([]byte{kindState}, id...) }

// RecordStates keeps events, each validated first (nothing is written if
// one is invalid), as pending gap states, synced to disk before it returns
// nil whatever Options.Sync says: an operator's decision is rare and must
// not be lost to a crash. An event whose ID the store holds is kept once:
// of two copies of one decision (gapstate.SameDecision: a retry stamped
// again) that differ, gapstate.First's, pending again if it replaces a
// shipped one. An ID the store or the call holds for another decision
// fails the call with gapstate.ErrIDTaken, nothing written: one of the two
// would be answered for and dropped. It never records coverage.
func (s *Store) RecordStates(ctx context.Context, events []gapstate.Event) error {
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return coverage.StoreError("record states", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.recordableLocked(); err != nil {
		return coverage.StoreError("record states", err)
	}
	keep := map[string]*storedState{}
	for i := range events {
		e := &events[i]
		old := keep[e.ID]
		if old == nil {
			old = s.states[e.ID]
		}
		if old != nil && !gapstate.SameDecision(&old.Event, e) {
			return fmt.Errorf("%w: event %q: the ID is held for %s %v of %q (%q), not %s %v of %q (%q): give this decision a new ID",
				gapstate.ErrIDTaken, e.ID, old.Event.State, old.Event.Range, old.Event.Destination.String(), old.Event.Reason, e.State, e.Range, e.Destination.String(), e.Reason)
		}
		if old != nil && (gapstate.SameCopy(&old.Event, e) || !gapstate.First(e, &old.Event)) {
			continue
		}
		keep[e.ID] = &storedState{Event: *e}
	}
	if len(keep) == 0 {
		return nil
	}
	if err := s.writeStatesLocked(keep, true); err != nil {
		return fmt.Errorf("%w: local store %s: recording %d gap states: %w; nothing of them is recorded, retry", coverage.ErrUnavailable, s.opts.Dir, len(keep), err)
	}
	for id, st := range keep {
		s.states[id] = st
	}
	return nil
}

// writeStatesLocked writes states in one Pebble batch of their own (they
// share no key with the staged coverage writes, so their order does not
// matter).
func (s *Store) writeStatesLocked(states map[string]*storedState, fsync bool) error {
	b := s.db.NewBatch()
	defer s.releaseBatch(b)
	for id, st := range states {
		value, err := json.Marshal(st)
		if err != nil {
			return err
		}
		if err := b.Set(stateKey(id), value, nil); err != nil {
			return err
		}
	}
	return s.call(func() error { return s.wal.commit(b, fsync) })
}

// PendingStates are the gap states the durable tier does not hold yet, by
// ID.
func (s *Store) PendingStates() []gapstate.Event {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []gapstate.Event
	for _, st := range s.states {
		if !st.Shipped {
			out = append(out, st.Event)
		}
	}
	slices.SortFunc(out, func(a, b gapstate.Event) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// MarkStatesShipped marks events shipped: call it only once the durable
// tier holds them (appended, and read back). An event whose stored copy was
// replaced meanwhile stays pending. The mark follows Options.Sync: a lost
// mark ships the event again, which the durable tier keeps once.
func (s *Store) MarkStatesShipped(ctx context.Context, events []gapstate.Event) error {
	if err := ctx.Err(); err != nil {
		return coverage.StoreError("mark states shipped", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.recordableLocked(); err != nil {
		return coverage.StoreError("mark states shipped", err)
	}
	marks := map[string]*storedState{}
	for i := range events {
		e := &events[i]
		if st := s.states[e.ID]; st != nil && !st.Shipped && gapstate.SameCopy(&st.Event, e) {
			marks[e.ID] = &storedState{Event: st.Event, Shipped: true}
		}
	}
	if len(marks) == 0 {
		return nil
	}
	if err := s.writeStatesLocked(marks, s.opts.Sync); err != nil {
		return fmt.Errorf("%w: local store %s: marking %d gap states shipped: %w; they stay pending and are appended again", coverage.ErrUnavailable, s.opts.Dir, len(marks), err)
	}
	for id, st := range marks {
		s.states[id] = st
	}
	return nil
}

// statesLocked is every state for Diagnostics, by destination, range, ID.
func (s *Store) statesLocked() []StateDiagnostics {
	out := make([]StateDiagnostics, 0, len(s.states))
	for _, st := range s.states {
		out = append(out, StateDiagnostics{Event: st.Event, Shipped: st.Shipped})
	}
	slices.SortFunc(out, func(a, b StateDiagnostics) int {
		if c := a.Destination.Compare(b.Destination); c != 0 {
			return c
		}
		if c := cmp.Compare(a.Start, b.Start); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out
}

// loadState reads one kindState key into the index.
func (s *Store) loadState(key, value []byte) error {
	var st storedState
	if err := json.Unmarshal(value, &st); err != nil {
		return corruptError(s.opts.Dir, fmt.Errorf("gap state key %x: %w", key, err))
	}
	if err := st.Event.Validate(); err != nil || st.Event.ID != string(key[1:]) {
		return corruptError(s.opts.Dir, fmt.Errorf("gap state key %x: an event of ID %q: %v", key, st.Event.ID, err))
	}
	s.states[st.Event.ID] = &st
	return nil
}
