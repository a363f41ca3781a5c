package object

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/backoff"
)

// Tier is the durable tier as one object per sink (see the package
// documentation). It is safe for concurrent use, and any number of
// Stores, in any number of processes, may share one Blobs location.
//
// # Checkpoints that span sinks
//
// A checkpoint is written one sink's object at a time, in sink-name
// order, each under its own condition; there is no transaction across
// sinks. Every touched sink's object is read, and the name checked
// (ErrNameReused), before any is written; read from the cache below where
// it has the object, so a name that another process (the same writer,
// restarted) reused since is found only at that sink's write, after
// earlier sinks may have taken this payload (as in a race, where no read
// ahead could see it). It is still ErrNameReused, and Landed stays false
// for a name bound to two payloads. If a later sink's write then
// fails after an earlier one landed, Append returns an error and the
// caller keeps the checkpoint pending: its retry (with MayHaveLanded)
// finds the name in the sinks already written and skips them, and writes
// the rest. Coverage may meanwhile show the earlier sinks' ranges and not
// the later ones': each of them was durably written by its sink, so this
// lags, never leads.
//
// A sink whose object cannot be read (ErrCorruptObject, ErrUnknownVersion)
// is never written, and does not hold the others back: they are written,
// and Append returns a *durable.PartialError naming the sinks it could not
// write and listing the destinations that landed, so that the caller marks
// only those and keeps the broken sink's ranges pending.
//
// Each sink's object records, with the checkpoint's name, its digest and
// how many sinks it wrote to, so Landed answers true only when every one
// of them holds the name: a partly written checkpoint has not landed.
type Tier struct {
	opts  Options
	stats struct{ appends, writes, preconditions, unknown, skipped, unreadable atomic.Int64 }

	// last is, per sink key, the object as this Tier last wrote it, with
	// its version: the next Append to the sink takes it out (so that no
	// two Appends share it) and writes If-Match that version without
	// reading first. A stale entry (another writer wrote since) only costs
	// a refused precondition and a re-read; it never lets a write through
	// unconditionally.
	lastMu sync.Mutex
	last   map[string]cachedObject

	// statesRead is, per gap-state key, the events read from it: a key's
	// content never changes (its digest is in the key), so it is read
	// once.
	statesMu   sync.Mutex
	statesRead map[string][]gapstate.Event

	// bases is, per base key, the base as this Tier's last Fold wrote it,
	// with its version (Options.FoldCacheBases): the next Fold takes it
	// out and writes If-Match that version without reading first.
	basesMu sync.Mutex
	bases   map[string]cachedBase
}

type cachedBase struct {
	b       *base
	version string
}

type cachedObject struct {
	o       *sinkObject
	version string
}

// The object store is a durable tier.
var (
	_ durable.Tier       = (*Tier)(nil)
	_ durable.LastWriter = (*Tier)(nil)
)

// Open returns a Tier over opts.Blobs. It does no I/O: an empty location
// is an empty tier.
func Open(_ context.Context, opts Options) (*Tier, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &Tier{opts: opts, last: map[string]cachedObject{}, bases: map[string]cachedBase{}}, nil
}

// remember keeps key's object as just written, at version.
func (s *Tier) remember(key string, o *sinkObject, version string) {
	s.lastMu.Lock()
	defer s.lastMu.Unlock()
	s.last[key] = cachedObject{o, version}
}

// readForWrite is read, from what this Tier last wrote of key where it
// has it (no round trip, no decoding for a sink's only writer), else from
// the Blobs. Only a conditional write follows it.
func (s *Tier) readForWrite(ctx context.Context, key, sink string) (*sinkObject, string, error) {
	s.lastMu.Lock()
	c, ok := s.last[key]
	delete(s.last, key)
	s.lastMu.Unlock()
	if ok && c.o.Sink == sink {
		return c.o, c.version, nil
	}
	return s.read(ctx, key, sink)
}

// Layout is how this Tier writes checkpoints (Options.Layout).
func (s *Tier) Layout() Layout { return s.opts.Layout }

// Name names the tier: the Blobs location and the prefix.
func (s *Tier) Name() string {
	if s.opts.Prefix == "" {
		return s.opts.Blobs.Name()
	}
	return s.opts.Blobs.Name() + " under " + s.opts.Prefix
}

// Stats counts what this Tier did since Open.
type Stats struct {
	Appends       int64 // Append calls that returned nil
	Writes        int64 // sink objects written
	Preconditions int64 // conditional writes refused: another writer wrote first
	Unknown       int64 // writes that failed otherwise, of unknown outcome
	Skipped       int64 // sink objects already holding the checkpoint's name
	Unreadable    int64 // deltas left out of a read: they cannot be read
}

// Stats returns the counters.
func (s *Tier) Stats() Stats {
	return Stats{Appends: s.stats.appends.Load(), Writes: s.stats.writes.Load(), Preconditions: s.stats.preconditions.Load(),
		Unknown: s.stats.unknown.Load(), Skipped: s.stats.skipped.Load(), Unreadable: s.stats.unreadable.Load()}
}

// Append merges the checkpoint's ranges into each of its sinks' objects.
// With MayHaveLanded set it also reads every other sink's object, so that
// a name reused with ranges for other sinks is ErrNameReused too; without
// it only the touched sinks are checked.
func (s *Tier) Append(ctx context.Context, c durable.Checkpoint) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if s.opts.Layout == LayoutDeltas {
		return s.appendDelta(ctx, c)
	}
	parts, err := split(c)
	if err != nil {
		return err
	}
	if len(parts) == 0 {
		// No ranges: no sink to write, nor any name to look for (split).
		s.stats.appends.Add(1)
		return nil
	}
	sinks := make([]string, 0, len(parts))
	for sink := range parts {
		sinks = append(sinks, sink)
	}
	slices.Sort(sinks)
	type snapshot struct {
		o       *sinkObject
		version string
	}
	read := make(map[string]snapshot, len(sinks))
	var broken []error // sinks whose objects cannot be read: left as they are
	writable := sinks[:0:0]
	for _, sink := range sinks {
		readFn := s.readForWrite
		if c.MayHaveLanded {
			readFn = s.read // what may have landed is in the store, not in what this Tier saw
		}
		o, version, err := readFn(ctx, sinkKey(s.opts.Prefix, sink), sink)
		if unreadable(err) {
			// Never overwritten, and it must not stop the other sinks:
			// they are written, and this one reported (PartialError).
			broken = append(broken, fmt.Errorf("sink %q (restore its object or move it aside; its ranges stay pending): %w", sink, err))
			continue
		}
		if err != nil {
			return fmt.Errorf("object: append %q of %q: %w", c.Name, c.Writer, err)
		}
		if _, err := bound(o, parts[sink]); err != nil {
			return err
		}
		read[sink] = snapshot{o, version}
		writable = append(writable, sink)
	}
	if c.MayHaveLanded {
		keys, err := s.list(ctx)
		if err != nil {
			return fmt.Errorf("object: append %q of %q: %w", c.Name, c.Writer, err)
		}
		p := parts[sinks[0]]
		touched := make(map[string]bool, len(sinks))
		for _, sink := range sinks {
			touched[sinkKey(s.opts.Prefix, sink)] = true // read and checked above
		}
		for _, key := range keys {
			if touched[key] {
				continue
			}
			o, _, err := s.read(ctx, key, "")
			if unreadable(err) {
				// Another sink's object that cannot be read cannot hold
				// this name for us to find; refusing here would stop
				// every sink's retries behind it. Readers of that sink
				// still fail on it, loudly.
				s.opts.Logger.Warn("object: skipping an unreadable sink object in the search for a reused checkpoint name",
					"key", key, "checkpoint", c.Name, "writer", c.Writer, "err", err)
				continue
			}
			if err != nil {
				return fmt.Errorf("object: append %q of %q: %w", c.Name, c.Writer, err)
			}
			if _, err := bound(o, p); err != nil {
				return err
			}
		}
	}
	var landed []coverage.Destination
	for written, sink := range writable {
		err := s.write(ctx, sink, parts[sink], read[sink].o, read[sink].version)
		if unreadable(err) {
			broken = append(broken, fmt.Errorf("sink %q (restore its object or move it aside; its ranges stay pending): %w", sink, err))
			continue
		}
		if err != nil {
			advice := "append it again with MayHaveLanded"
			if errors.Is(err, durable.ErrNameReused) {
				advice = "give every distinct checkpoint its own name"
			}
			return fmt.Errorf("object: append %q of %q: sink %q (%d of its %d sinks written before it; %s): %w",
				c.Name, c.Writer, sink, written, len(sinks), advice, err)
		}
		for _, dr := range parts[sink].dests {
			landed = append(landed, dr.Destination)
		}
	}
	if len(broken) > 0 {
		err := fmt.Errorf("object: append %q of %q: %d of its %d sinks not written: %w", c.Name, c.Writer, len(broken), len(sinks), errors.Join(broken...))
		if len(landed) == 0 {
			return err
		}
		return &durable.PartialError{Landed: landed, Err: err}
	}
	s.stats.appends.Add(1)
	return nil
}

// split groups the checkpoint's ranges by sink, merged per destination.
// A checkpoint without ranges touches no sink: there is nothing to write,
// nor to find later.
func split(c durable.Checkpoint) (map[string]*part, error) {
	merged := durable.MergeRanges(c.Ranges)
	raw, err := hex.DecodeString(durable.Digest("append", c.Writer, merged, c.Rows()))
	if err != nil || len(raw) != digestLen {
		return nil, fmt.Errorf("object: the payload digest %x is not %d bytes: %v", raw, digestLen, err)
	}
	parts := map[string]*part{}
	for _, dr := range merged {
		if len(dr.Ranges) == 0 {
			continue
		}
		p := parts[dr.Destination.Sink]
		if p == nil {
			p = &part{writer: c.Writer, name: c.Name, digest: [digestLen]byte(raw)}
			parts[dr.Destination.Sink] = p
		}
		p.dests = append(p.dests, dr) // in destination order, as merged
	}
	for _, p := range parts {
		p.sinks = uint64(len(parts))
	}
	return parts, nil
}

// bound reports whether o holds p's name, bound to p's payload; the same
// name with another payload is ErrNameReused.
func bound(o *sinkObject, p *part) (bool, error) {
	e, ok := o.lookup(p.writer, p.name)
	if ok && (e.Digest != p.digest || e.Sinks != p.sinks) {
		return false, fmt.Errorf("object: %w: %q wrote %q to sink %q with payload %x over %d sinks, now %x over %d: give every distinct checkpoint its own name",
			durable.ErrNameReused, p.writer, p.name, o.Sink, e.Digest, e.Sinks, p.digest, p.sinks)
	}
	return ok, nil
}

// write merges p into sink's object until a conditional write of the
// merge lands, or the object is found to hold p's name already (a write
// whose answer was lost landed). o and version are the object as read.
func (s *Tier) write(ctx context.Context, sink string, p *part, o *sinkObject, version string) error {
	key := sinkKey(s.opts.Prefix, sink)
	var last error
	for attempt := 1; ; attempt++ {
		if o != nil {
			found, err := bound(o, p)
			if err != nil {
				return err
			}
			if found {
				s.stats.skipped.Add(1)
				return nil
			}
			o.apply(p, s.opts.Now().UnixNano())
			data := encodeObject(o)
			next, err := s.opts.Blobs.Put(ctx, key, data, version)
			if err == nil {
				s.stats.writes.Add(1)
				s.remember(key, o, next)
				return nil
			}
			if errors.Is(err, ErrPrecondition) {
				s.stats.preconditions.Add(1)
			} else {
				s.stats.unknown.Add(1)
				s.opts.Logger.Warn("object: write of unknown outcome; reading it back", "key", key, "attempt", attempt, "err", err)
			}
			last, o = err, nil
		}
		if attempt >= s.opts.MaxAttempts {
			return fmt.Errorf("%s: %d attempts: %w", key, attempt, last)
		}
		if err := s.sleep(ctx, attempt); err != nil {
			return fmt.Errorf("%s: %w (after: %w)", key, err, last)
		}
		var err error
		if o, version, err = s.read(ctx, key, sink); err != nil {
			if unreadable(err) {
				return err
			}
			last = err
		}
	}
}

// sleep waits before retry attempt n: full jitter between MinBackoff and
// MaxBackoff.
func (s *Tier) sleep(ctx context.Context, attempt int) error {
	return backoff.Sleep(ctx, backoff.FullJitter(attempt, s.opts.MinBackoff, s.opts.MaxBackoff))
}
