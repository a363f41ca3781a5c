package object

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// read returns the object under key and its version; an empty object and
// version "" when there is none. sink is the name the object must hold,
// or "" for any whose key is key.
func (s *Tier) read(ctx context.Context, key, sink string) (*sinkObject, string, error) {
	data, version, err := s.opts.Blobs.Get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return &sinkObject{Sink: sink}, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s of %s: %w", key, s.opts.Blobs.Name(), err)
	}
	o, err := decodeObject(data)
	if err != nil {
		return nil, "", fmt.Errorf("%s of %s (left as it is): %w", key, s.opts.Blobs.Name(), err)
	}
	if (sink != "" && o.Sink != sink) || sinkKey(s.opts.Prefix, o.Sink) != key {
		return nil, "", fmt.Errorf("%s of %s (left as it is): %w: it holds sink %q, another key's", key, s.opts.Blobs.Name(), ErrCorruptObject, o.Sink)
	}
	return o, version, nil
}

// unreadable: the object is there but cannot be read (a bad checksum, a
// format this build does not know), as opposed to failing to reach it.
func unreadable(err error) bool {
	return errors.Is(err, ErrCorruptObject) || errors.Is(err, ErrUnknownVersion)
}

// list returns the keys of every sink's object.
func (s *Tier) list(ctx context.Context) ([]string, error) {
	dir := s.opts.Prefix + sinksDir
	keys, err := s.opts.Blobs.List(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("list %s of %s: %w", dir, s.opts.Blobs.Name(), err)
	}
	return slices.DeleteFunc(keys, func(k string) bool { return strings.Contains(k[len(dir):], "/") }), nil
}

// scan calls fn with each sink's object, or sink's alone when it is set.
func (s *Tier) scan(ctx context.Context, sink string, fn func(*sinkObject)) error {
	keys := []string{sinkKey(s.opts.Prefix, sink)}
	if sink == "" {
		var err error
		if keys, err = s.list(ctx); err != nil {
			return err
		}
	}
	for _, key := range keys {
		o, _, err := s.read(ctx, key, sink)
		if err != nil {
			return err
		}
		fn(o)
	}
	return nil
}

// Coverage returns the coverage of every destination f selects, from
// every layout: the sink objects, the bases and the deltas not yet folded.
func (s *Tier) Coverage(ctx context.Context, f durable.Filter) (map[coverage.Destination]*coverage.RangeSet, error) {
	out := map[coverage.Destination]*coverage.RangeSet{}
	err := s.view(ctx, f, func(d coverage.Destination, ds *destState) {
		if set := out[d]; set != nil {
			for _, r := range ds.Ranges {
				_ = set.Add(r) // decoding checked them
			}
			return
		}
		set, _ := coverage.NewRangeSet(ds.Ranges...) // decoding checked them
		out[d] = &set
	})
	if err != nil {
		return nil, fmt.Errorf("object: coverage: %w", err)
	}
	return out, nil
}

// LastWrites returns, for every destination f selects, its last write:
// how far behind each destination's writers are.
func (s *Tier) LastWrites(ctx context.Context, f durable.Filter) (map[coverage.Destination]durable.LastWrite, error) {
	out := map[coverage.Destination]durable.LastWrite{}
	err := s.view(ctx, f, func(d coverage.Destination, ds *destState) {
		if w, ok := out[d]; !ok || ds.LastWrite > w.At.UnixNano() {
			out[d] = durable.LastWrite{Writer: ds.LastWriter, At: time.Unix(0, ds.LastWrite)}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("object: last writes: %w", err)
	}
	return out, nil
}

// Landed reports whether writer's checkpoint of that name landed: as a
// delta (or in a fold log, once folded), or in every sink object it wrote
// to.
func (s *Tier) Landed(ctx context.Context, writer, name string) (bool, error) {
	found, err := s.landedDelta(ctx, writer, name)
	if err != nil {
		return false, fmt.Errorf("object: landed %q of %q: %w", name, writer, err)
	}
	if found {
		return true, nil
	}
	return s.landedInSinkObjects(ctx, writer, name)
}

// landedInSinkObjects reports whether writer's checkpoint of that name is
// in every sink object it wrote to. It reads every sink's object. Past the bounds of
// MaxNamesPerWriter and MaxWriters it answers false, as it does for a
// partly written checkpoint: a re-append, which is harmless.
func (s *Tier) landedInSinkObjects(ctx context.Context, writer, name string) (bool, error) {
	keys, err := s.list(ctx)
	if err != nil {
		return false, fmt.Errorf("object: landed %q of %q: %w", name, writer, err)
	}
	var hits uint64
	var first nameEntry
	agree := true
	for _, key := range keys {
		o, _, err := s.read(ctx, key, "")
		if unreadable(err) {
			// It may hold the name; counting it as not holding it can
			// only answer false, which costs a re-append, and that
			// re-append refuses to overwrite the object. (Unless the
			// writer reused the name: it may hold the other payload, as
			// a payload that wrote nothing is not seen either. Landed
			// answers for the name, not for a payload.)
			s.opts.Logger.Warn("object: an unreadable sink object counts as not holding the checkpoint", "key", key, "checkpoint", name, "writer", writer, "err", err)
			continue
		}
		if err != nil {
			return false, fmt.Errorf("object: landed %q of %q: %w", name, writer, err)
		}
		if e, ok := o.lookup(writer, name); ok {
			if hits == 0 {
				first = e
			}
			agree = agree && e == first
			hits++
		}
	}
	return agree && hits > 0 && hits == first.Sinks, nil
}
