package object

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// view calls visit with every destination state f selects, in every
// layout. One destination may be visited several times (a sink object, a
// base, deltas): the caller merges. visit is never called concurrently.
//
// The order of the reads is what makes a concurrent fold safe: the sink
// objects are read before the bases, and the deltas are listed before the
// bases are read, while a fold writes a base before it empties a sink
// object or deletes a delta. So whatever a fold moved before the bases
// were read is in them; a listed delta found deleted when it is read was
// folded into a base after that, and the bases are read once more.
func (s *Tier) view(ctx context.Context, f durable.Filter, visit func(coverage.Destination, *destState)) error {
	deltaKeys, err := s.listDeltas(ctx)
	if err != nil {
		return err
	}
	var mu sync.Mutex
	match := f.Matcher()
	visitObject := func(o *sinkObject) {
		mu.Lock()
		defer mu.Unlock()
		for i := range o.Dests {
			if d := (coverage.Destination{Sink: o.Sink, Topic: o.Dests[i].Topic, Partition: o.Dests[i].Partition}); match(d) {
				visit(d, &o.Dests[i])
			}
		}
	}
	if err := s.scan(ctx, f.Sink, visitObject); err != nil {
		return err
	}
	if err := s.readBases(ctx, f, visitObject); err != nil {
		return err
	}
	var gone bool
	err = s.each(ctx, deltaKeys, func(ctx context.Context, key string) error {
		d, err := s.readDelta(ctx, key)
		if errors.Is(err, ErrNotFound) {
			mu.Lock()
			gone = true
			mu.Unlock()
			return nil
		}
		if unreadable(err) {
			// A delta carries any sinks, so failing on it would fail every
			// read of every sink. Its ranges are left out: coverage lags
			// (replayed, never claimed), the error is logged and counted,
			// and Fold leaves it where it is for an operator.
			s.stats.unreadable.Add(1)
			s.opts.Logger.Error("object: a delta cannot be read and is left out of this read (coverage lags until it is restored, or its batches are replayed); restore it or move it aside", "key", key, "err", err)
			return nil
		}
		if err != nil {
			return err
		}
		for _, o := range d.Sinks {
			if f.Sink == "" || f.Sink == o.Sink {
				visitObject(o)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if gone {
		return s.readBases(ctx, f, visitObject)
	}
	return nil
}

// listDeltas lists the deltas not yet folded.
func (s *Tier) listDeltas(ctx context.Context) ([]string, error) {
	dir := s.opts.Prefix + deltasDir
	keys, err := s.opts.Blobs.List(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("list %s of %s: %w", dir, s.opts.Blobs.Name(), err)
	}
	out := keys[:0]
	for _, k := range keys {
		if isDeltaKey(s.opts.Prefix, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// baseKeys are the keys of the bases f can select from: one for a
// partition, one per group of the partitions listed, a topic's for a
// topic, else all.
func (s *Tier) baseKeys(ctx context.Context, f durable.Filter) ([]string, error) {
	if f.Topic != "" && f.Partition != nil {
		return []string{baseKey(s.opts.Prefix, f.Topic, *f.Partition)}, nil
	}
	if len(f.Partitions) > 0 {
		var keys []string
		seen := map[string]bool{}
		for _, tp := range f.Partitions {
			k := baseKey(s.opts.Prefix, tp.Topic, tp.Partition)
			if (f.Topic == "" || f.Topic == tp.Topic) && (f.Partition == nil || *f.Partition == tp.Partition) && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
		return keys, nil
	}
	dir := s.opts.Prefix + basesDir
	if f.Topic != "" {
		dir += nameKey(f.Topic) + "/"
	}
	keys, err := s.opts.Blobs.List(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("list %s of %s: %w", dir, s.opts.Blobs.Name(), err)
	}
	out := keys[:0]
	for _, k := range keys {
		if isBaseKey(s.opts.Prefix, k) {
			out = append(out, k)
		}
	}
	return out, nil
}

// readBases reads the bases f can select from and calls fn with each of
// their sinks' objects f's sink matches.
func (s *Tier) readBases(ctx context.Context, f durable.Filter, fn func(*sinkObject)) error {
	keys, err := s.baseKeys(ctx, f)
	if err != nil {
		return err
	}
	return s.each(ctx, keys, func(ctx context.Context, key string) error {
		g, _, err := s.readBase(ctx, key)
		if err != nil || g == nil {
			return err
		}
		for _, o := range g.Sinks {
			if f.Sink == "" || f.Sink == o.Sink {
				fn(o)
			}
		}
		return nil
	})
}

// readBase reads the base under key and its version; nil and "" when
// there is none.
func (s *Tier) readBase(ctx context.Context, key string) (*base, string, error) {
	data, version, err := s.opts.Blobs.Get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("read %s of %s: %w", key, s.opts.Blobs.Name(), err)
	}
	g, err := s.baseAt(key, data)
	if err != nil {
		return nil, "", err
	}
	return g, version, nil
}

// baseAt decodes data, read under key, checking that it is the base its
// key names.
func (s *Tier) baseAt(key string, data []byte) (*base, error) {
	g, err := decodeBase(data)
	if err != nil {
		return nil, fmt.Errorf("%s of %s (left as it is): %w", key, s.opts.Blobs.Name(), err)
	}
	if (group{g.Topic, g.Group}).key(s.opts.Prefix) != key {
		return nil, fmt.Errorf("%s of %s (left as it is): %w: it holds topic %q group %d, another key's", key, s.opts.Blobs.Name(), ErrCorruptObject, g.Topic, g.Group)
	}
	return g, nil
}

// each calls fn for every key, Options.Parallel at a time; the first error
// stops it.
func (s *Tier) each(ctx context.Context, keys []string, fn func(context.Context, string) error) error {
	return forEach(ctx, s.opts.Parallel, keys, fn)
}

// forEach calls fn for every item, parallel at a time; the first error
// stops it.
func forEach[T any](ctx context.Context, parallel int, items []T, fn func(context.Context, T) error) error {
	if len(items) == 1 {
		return fn(ctx, items[0])
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(parallel)
	for _, item := range items {
		g.Go(func() error { return fn(ctx, item) })
	}
	return g.Wait()
}
