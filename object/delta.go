package object

import (
	"cmp"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

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
	var o *sinkObject
	for i, dr := range merged { // in (sink, topic, partition) order
		if len(dr.Ranges) == 0 {
			continue
		}
		if o == nil || o.Sink != dr.Destination.Sink {
			o = sinkIn(&d.Sinks, dr.Destination.Sink)
			n := 0 // the sink's destinations: one allocation for them all
			for _, next := range merged[i:] {
				if next.Destination.Sink != o.Sink {
					break
				}
				n++
			}
			o.Dests = slices.Grow(o.Dests, n)
		}
		o.Dests = append(o.Dests, destState{Topic: dr.Destination.Topic, Partition: dr.Destination.Partition,
			LastWriter: c.Writer, LastWrite: now, Ranges: dr.Ranges})
	}
	if len(d.Sinks) == 0 {
		s.stats.appends.Add(1)
		return nil
	}
	key := deltaKey(s.opts.Prefix, c.Writer, c.Name, d.Digest)
	if c.MayHaveLanded {
		found, err := s.findDelta(ctx, d)
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
			// The key is taken: by this very payload (its name and digest
			// are the key), an earlier attempt whose answer was lost. The
			// refusal is not trusted alone: the delta is read back, or found
			// folded.
			s.stats.preconditions.Add(1)
			there, verr := s.deltaThere(ctx, key, d)
			if verr == nil && there {
				s.stats.skipped.Add(1)
				s.stats.appends.Add(1)
				return nil
			}
			err = cmp.Or(verr, err)
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

// deltaThere reports whether d is under key, or was folded (a fold log
// names it with its digest).
func (s *Tier) deltaThere(ctx context.Context, key string, d *delta) (bool, error) {
	got, err := s.readDelta(ctx, key)
	switch {
	case err == nil:
		return got.Digest == d.Digest, nil
	case !errors.Is(err, ErrNotFound):
		return false, err
	}
	e, found, err := s.inFoldLogs(ctx, d.Writer, d.Name)
	return found && e.Digest == d.Digest, err
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
	return s.deltaAt(key, data)
}

// deltaAt decodes data, read under key, checking that it is the delta
// its key names.
func (s *Tier) deltaAt(key string, data []byte) (*delta, error) {
	d, err := decodeDelta(data)
	if err != nil {
		return nil, fmt.Errorf("%s of %s (left as it is): %w", key, s.opts.Blobs.Name(), err)
	}
	if deltaKey(s.opts.Prefix, d.Writer, d.Name, d.Digest) != key {
		return nil, fmt.Errorf("%s of %s (left as it is): %w: it holds %q of %q, another key's", key, s.opts.Blobs.Name(), ErrCorruptObject, d.Name, d.Writer)
	}
	return d, nil
}

// findDelta reports whether d's checkpoint landed: as a delta, in a fold
// log once folded, or in the sink objects (an attempt made before this
// process's layout changed). Found with another payload, the name was
// reused: ErrNameReused.
func (s *Tier) findDelta(ctx context.Context, d *delta) (bool, error) {
	digests, err := s.deltaDigests(ctx, d.Writer, d.Name)
	if err != nil {
		return false, err
	}
	for _, got := range digests {
		if got != d.Digest {
			return false, fmt.Errorf("%w: %q wrote %q with another payload (a delta of digest %x): give every distinct checkpoint its own name", durable.ErrNameReused, d.Writer, d.Name, got)
		}
	}
	if len(digests) > 0 {
		return true, nil
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

// deltaDigests lists the digests of writer's deltas of that name not yet
// folded: one key per payload.
func (s *Tier) deltaDigests(ctx context.Context, writer, name string) ([][digestLen]byte, error) {
	p := namePrefix(s.opts.Prefix, writer, name)
	keys, err := s.opts.Blobs.List(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("list %s of %s: %w", p, s.opts.Blobs.Name(), err)
	}
	var out [][digestLen]byte
	for _, k := range keys {
		rest := strings.TrimPrefix(k, p)
		if raw, err := hex.DecodeString(rest); err == nil && len(raw) == digestLen && isDeltaKey(s.opts.Prefix, k) {
			out = append(out, [digestLen]byte(raw))
		}
	}
	return out, nil
}

// landedDelta reports whether writer's checkpoint name is a delta not yet
// folded, or in a fold log (within Options.NameRetention of its fold).
func (s *Tier) landedDelta(ctx context.Context, writer, name string) (bool, error) {
	digests, err := s.deltaDigests(ctx, writer, name)
	if err != nil || len(digests) > 0 {
		return len(digests) > 0, err
	}
	_, found, err := s.inFoldLogs(ctx, writer, name)
	return found, err
}
