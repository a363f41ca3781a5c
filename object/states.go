package object

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// statesDir is where, under Options.Prefix, the gap states live: one
// object per AppendStates call, gap_states/<first event's ID>.<digest>,
// a JSON array of the call's events. The digest (of the object's bytes,
// the first 16 bytes of SHA-256 in hex) is in the key, so a key's content
// is fixed for ever: a retry writes the same key with the same bytes, and
// two calls that share a first ID but not their events are two keys.
const statesDir = "gap_states/"

// statesDigestLen is the digest's length in the key, in bytes.
const statesDigestLen = 16

var _ durable.StateStore = (*Tier)(nil)

// statesKey is the key of an AppendStates call's object of these bytes.
func statesKey(prefix, firstID string, data []byte) string {
	sum := sha256.Sum256(data)
	return prefix + statesDir + firstID + "." + hex.EncodeToString(sum[:statesDigestLen])
}

// encodeStates is the object of a call: its events as they are kept, At
// in UTC to the microsecond (what every tier keeps).
func encodeStates(events []gapstate.Event) ([]byte, error) {
	kept := make([]gapstate.Event, len(events))
	for i, e := range events {
		e.At = e.At.UTC().Truncate(time.Microsecond)
		kept[i] = e
	}
	data, err := json.Marshal(kept)
	if err != nil {
		return nil, fmt.Errorf("object: encode gap states: %w", err)
	}
	return data, nil
}

// AppendStates writes the events as one object, created once
// (If-None-Match), which no writer ever changes: every writer's events
// are kept beside every other's, a union by construction. The events are
// validated first; one bad event writes nothing. A write of unknown
// outcome is tried again; a refused creation means the key is taken, by
// an earlier attempt of this very call (the key names its bytes), which
// is read back to be sure. What is there instead (a write cut short by a
// store that is not atomic) is replaced, under If-Match, by the only
// bytes the key can hold.
func (s *Tier) AppendStates(ctx context.Context, events []gapstate.Event) error {
	if err := durable.ValidateStates(events); err != nil {
		return fmt.Errorf("object: append gap states: %w", err)
	}
	if len(events) == 0 {
		return nil
	}
	data, err := encodeStates(events)
	if err != nil {
		return err
	}
	key := statesKey(s.opts.Prefix, events[0].ID, data)
	ifMatch := ""
	var last error
	for attempt := 1; ; attempt++ {
		_, err := s.opts.Blobs.Put(ctx, key, data, ifMatch)
		if err == nil {
			s.stats.writes.Add(1)
			return nil
		}
		if errors.Is(err, ErrPrecondition) {
			s.stats.preconditions.Add(1)
			got, version, gerr := s.opts.Blobs.Get(ctx, key)
			switch {
			case gerr == nil && bytes.Equal(got, data):
				s.stats.skipped.Add(1)
				return nil // an earlier attempt landed
			case gerr == nil:
				// Not the bytes its key names: never readable as events
				// (see States), so replacing them loses nothing.
				s.opts.Logger.Warn("object: a gap-state object does not hold what its key names; writing it again", "key", key, "bytes", len(got))
				ifMatch = version
			case errors.Is(gerr, ErrNotFound):
				ifMatch = "" // a spurious refusal: create it again
			default:
				err = gerr
			}
		} else {
			s.stats.unknown.Add(1)
			s.opts.Logger.Warn("object: gap-state write of unknown outcome; trying again", "key", key, "attempt", attempt, "err", err)
		}
		last = err
		if attempt >= s.opts.MaxAttempts {
			return fmt.Errorf("object: append %d gap states as %s of %s: %d attempts (append them again: a retry is harmless): %w",
				len(events), key, s.opts.Blobs.Name(), attempt, last)
		}
		if err := s.sleep(ctx, attempt); err != nil {
			return fmt.Errorf("object: append %d gap states as %s: %w (after: %w)", len(events), key, err, last)
		}
	}
}

// States returns every event of the destinations f selects, one per ID:
// the objects under gap_states/ are listed and read (each once per Tier:
// a key's content never changes), and f is matched after the read. A
// listed object that cannot be read, is missing or does not hold what its
// key names is an error naming it: leaving it out would lose its events
// (a reopen among them) without a word, and reading part of it would
// invent some.
func (s *Tier) States(ctx context.Context, f durable.Filter) ([]gapstate.Event, error) {
	dir := s.opts.Prefix + statesDir
	keys, err := s.opts.Blobs.List(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("object: gap states: list %s of %s: %w", dir, s.opts.Blobs.Name(), err)
	}
	match := f.Matcher()
	// One copy per ID, the same whatever f selects and whatever order the
	// keys list in: the first recorded (gapstate.First). A retry the
	// sidecar stamped later is a second copy of the ID, and must not
	// outrank a decision recorded between the two.
	kept := map[string]gapstate.Event{}
	var order []string
	for _, key := range keys {
		if !isStatesKey(s.opts.Prefix, key) {
			continue // not an object of ours
		}
		events, err := s.readStates(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("object: gap states: %w", err)
		}
		for _, e := range events {
			k, ok := kept[e.ID]
			if !ok {
				order = append(order, e.ID)
			}
			if !ok || gapstate.First(&e, &k) {
				kept[e.ID] = e
			}
		}
	}
	out := []gapstate.Event{}
	for _, id := range order {
		if e := kept[id]; match(e.Destination) {
			out = append(out, e)
		}
	}
	return out, nil
}

// readStates returns the events of the gap-state object under key, from
// this Tier's cache where it read the key before.
func (s *Tier) readStates(ctx context.Context, key string) ([]gapstate.Event, error) {
	s.statesMu.Lock()
	events, ok := s.statesRead[key]
	s.statesMu.Unlock()
	if ok {
		return events, nil
	}
	data, _, err := s.opts.Blobs.Get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		// Listed, so written: a gap-state object is never deleted. A
		// store whose reads lag its listing answers so; read again later.
		return nil, fmt.Errorf("%s of %s was listed but is not there (a store whose reads lag its listing? read again): %w", key, s.opts.Blobs.Name(), err)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s of %s: %w", key, s.opts.Blobs.Name(), err)
	}
	events, err = decodeStates(s.opts.Prefix, key, data)
	if err != nil {
		return nil, fmt.Errorf("%s of %s (left as it is; its writer's retry rewrites it, else restore it or move it aside): %w", key, s.opts.Blobs.Name(), err)
	}
	s.statesMu.Lock()
	if s.statesRead == nil {
		s.statesRead = map[string][]gapstate.Event{}
	}
	s.statesRead[key] = events
	s.statesMu.Unlock()
	return events, nil
}

// decodeStates reads a gap-state object: its bytes must be the ones its
// key names (so a write cut short, or a foreign object under our key, is
// refused whole), a JSON array of valid events whose first has the key's
// ID.
func decodeStates(prefix, key string, data []byte) ([]gapstate.Event, error) {
	var events []gapstate.Event
	if err := json.Unmarshal(data, &events); err != nil {
		return nil, fmt.Errorf("%w: not a JSON array of gap-state events: %w", ErrCorruptObject, err)
	}
	if len(events) == 0 {
		return nil, fmt.Errorf("%w: an empty gap-state object", ErrCorruptObject)
	}
	if statesKey(prefix, events[0].ID, data) != key {
		return nil, fmt.Errorf("%w: its bytes are not the ones its key names (a write cut short?)", ErrCorruptObject)
	}
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return nil, fmt.Errorf("%w: event %d: %w", ErrCorruptObject, i, err)
		}
	}
	return events, nil
}

// isStatesKey reports whether key, listed under gap_states/, has a
// gap-state key's shape: ID.DIGEST.
func isStatesKey(prefix, key string) bool {
	rest, ok := strings.CutPrefix(key, prefix+statesDir)
	id, digest, ok2 := strings.Cut(rest, ".")
	return ok && ok2 && id != "" && !strings.Contains(id, "/") && isHex(digest, 2*statesDigestLen)
}
