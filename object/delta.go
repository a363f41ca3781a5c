package object

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/covmirror/covmirror/durable"
)

// appendDelta writes c as one delta, created once (If-None-Match): no
// other writer ever meets it, and the bytes are what c carries. An
// attempt of unknown outcome is tried again; a refused creation means the
// key is taken, by this checkpoint (an earlier attempt landed) or by the
// name reused with another payload (ErrNameReused).
func (s *Tier) appendDelta(ctx context.Context, c durable.Checkpoint) error {
	merged := durable.MergeRanges(c.Ranges)
	raw, err := hex.DecodeString(durable.Digest("append", c.Writer, merged, c.Rows()))
	if err != nil || len(raw) != digestLen {
		return fmt.Errorf("object: the payload digest %x is not %d bytes: %v", raw, digestLen, err)
	}
	now := s.opts.Now().UnixNano()
	d := &delta{Writer: c.Writer, Name: c.Name, Digest: [digestLen]byte(raw), Created: now}
	for _, dr := range merged { // in (sink, topic, partition) order
		if len(dr.Ranges) == 0 {
			continue
		}
		o := sinkIn(&d.Sinks, dr.Destination.Sink)
		o.Dests = append(o.Dests, destState{Topic: dr.Destination.Topic, Partition: dr.Destination.Partition,
			LastWriter: c.Writer, LastWrite: now, Ranges: dr.Ranges})
	}
	if len(d.Sinks) == 0 {
		s.stats.appends.Add(1)
		return nil
	}
	key := deltaKey(s.opts.Prefix, c.Writer, c.Name)
	if c.MayHaveLanded {
		found, err := s.findDelta(ctx, key, d)
		if err != nil {
			return fmt.Errorf("object: append %q of %q: %w", c.Name, c.Writer, err)
		}
		if found {
			s.stats.skipped.Add(1)
			s.stats.appends.Add(1)
			return nil
		}
	}
	data := encodeDelta(d)
	var last error
	for attempt := 1; ; attempt++ {
		_, err := s.opts.Blobs.Put(ctx, key, data, "")
		if err == nil {
			s.stats.writes.Add(1)
			s.stats.appends.Add(1)
			return nil
		}
		if errors.Is(err, ErrPrecondition) {
			s.stats.preconditions.Add(1)
			same, gerr := s.sameDelta(ctx, key, d)
			switch {
			case gerr == nil && same:
				s.stats.skipped.Add(1)
				s.stats.appends.Add(1)
				return nil
			case gerr == nil:
				return fmt.Errorf("object: %w: %q wrote %q with another payload (%s): give every distinct checkpoint its own name",
					durable.ErrNameReused, c.Writer, c.Name, key)
			case errors.Is(gerr, ErrNotFound):
				err = gerr // folded and deleted meanwhile: creating it again is a harmless duplicate
			case unreadable(gerr):
				return fmt.Errorf("object: append %q of %q: the delta %s is taken and cannot be read (move it aside): %w", c.Name, c.Writer, key, gerr)
			default:
				err = gerr
			}
		} else {
			s.stats.unknown.Add(1)
			s.opts.Logger.Warn("object: write of unknown outcome; trying again", "key", key, "attempt", attempt, "err", err)
		}
		last = err
		if attempt >= s.opts.MaxAttempts {
			return fmt.Errorf("object: append %q of %q: %s: %d attempts (append it again with MayHaveLanded): %w", c.Name, c.Writer, key, attempt, last)
		}
		if err := s.sleep(ctx, attempt); err != nil {
			return fmt.Errorf("object: append %q of %q: %s: %w (after: %w)", c.Name, c.Writer, key, err, last)
		}
	}
}

// sameDelta reads the delta under key and reports whether it is d's
// checkpoint: the same writer, name and payload digest.
func (s *Tier) sameDelta(ctx context.Context, key string, d *delta) (bool, error) {
	got, err := s.readDelta(ctx, key)
	if err != nil {
		return false, err
	}
	return got.Writer == d.Writer && got.Name == d.Name && got.Digest == d.Digest, nil
}

// readDelta reads and decodes the delta under key, checking that it is
// the one its key names.
func (s *Tier) readDelta(ctx context.Context, key string) (*delta, error) {
	data, _, err := s.opts.Blobs.Get(ctx, key)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, err
		}
		return nil, fmt.Errorf("read %s of %s: %w", key, s.opts.Blobs.Name(), err)
	}
	d, err := decodeDelta(data)
	if err != nil {
		return nil, fmt.Errorf("%s of %s (left as it is): %w", key, s.opts.Blobs.Name(), err)
	}
	if deltaKey(s.opts.Prefix, d.Writer, d.Name) != key {
		return nil, fmt.Errorf("%s of %s (left as it is): %w: it holds %q of %q, another key's", key, s.opts.Blobs.Name(), ErrCorruptObject, d.Name, d.Writer)
	}
	return d, nil
}

// findDelta reports whether d's checkpoint landed: as the delta under
// key, in a fold log once folded, or in the sink objects (an attempt made
// before this process's layout changed). Found with another payload, the
// name was reused: ErrNameReused.
func (s *Tier) findDelta(ctx context.Context, key string, d *delta) (bool, error) {
	same, err := s.sameDelta(ctx, key, d)
	switch {
	case err == nil && same:
		return true, nil
	case err == nil:
		return false, fmt.Errorf("%w: %q wrote %q with another payload (%s): give every distinct checkpoint its own name", durable.ErrNameReused, d.Writer, d.Name, key)
	case !errors.Is(err, ErrNotFound):
		return false, err
	}
	e, found, err := s.inFoldLogs(ctx, d.Writer, d.Name)
	if err != nil || found {
		if found && e.Digest != d.Digest {
			return false, fmt.Errorf("%w: %q wrote %q with another payload (folded): give every distinct checkpoint its own name", durable.ErrNameReused, d.Writer, d.Name)
		}
		return found, err
	}
	return s.landedInSinkObjects(ctx, d.Writer, d.Name)
}

// landedDelta reports whether writer's checkpoint name is a delta not yet
// folded, or in a fold log (within Options.NameRetention of its fold).
func (s *Tier) landedDelta(ctx context.Context, writer, name string) (bool, error) {
	_, err := s.readDelta(ctx, deltaKey(s.opts.Prefix, writer, name))
	switch {
	case err == nil:
		return true, nil
	case unreadable(err):
		// Counted as not landed, as an unreadable sink object is: the
		// re-append finds the key taken and fails, naming it, and every
		// reader fails on it until it is restored or moved aside.
		s.opts.Logger.Warn("object: an unreadable delta counts as not landed", "writer", writer, "checkpoint", name, "err", err)
		return false, nil
	case !errors.Is(err, ErrNotFound):
		return false, err
	}
	_, found, err := s.inFoldLogs(ctx, writer, name)
	return found, err
}
