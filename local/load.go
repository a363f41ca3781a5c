package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/covmirror/covmirror/coverage"
)

const (
	metaFormat         = "format"
	metaNextCheckpoint = "next-checkpoint-id"
	metaLastCheckpoint = "last-checkpoint"
	metaOpenCheckpoint = "open-checkpoint"
)

// load checks the format and rebuilds the in-memory index from Pebble.
func (s *Store) load() error {
	// Read every key once: Pebble verifies each block's checksum, so a
	// garbled table fails Open (ErrCorrupt) rather than a later call.
	if err := s.scan(nil, nil, func(_, _ []byte) error { return nil }); err != nil {
		return err
	}
	format, err := s.getMeta(metaFormat)
	if err != nil {
		return err
	}
	empty, err := s.isEmpty()
	if err != nil {
		return err
	}
	switch {
	case format == nil && empty:
		if err := s.wal.synced(func() error { return s.db.Set(metaKey(metaFormat), []byte(formatVersion), pebble.Sync) }); err != nil {
			return fmt.Errorf("%w: local store %s: writing its format: %w", coverage.ErrUnavailable, s.opts.Dir, err)
		}
	case format == nil:
		return incompatibleError(s.opts.Dir, errors.New("data without a covmirror format marker"))
	case string(format) != formatVersion:
		return incompatibleError(s.opts.Dir, fmt.Errorf("format %q, this build reads %q", format, formatVersion))
	}
	for _, kind := range []byte{kindCovered, kindCheckpointed, kindPendingSince} {
		if err := s.scan([]byte{kind}, []byte{kind + 1}, s.loadEntry); err != nil {
			return err
		}
	}
	if err := s.scan([]byte{kindState}, []byte{kindState + 1}, s.loadState); err != nil {
		return err
	}
	for d, st := range s.dests {
		pending := coverage.Gaps(&st.covered, &st.checkpointed)
		pending = s.checkpointable(d, pending)
		st.pending.reset(&pending)
	}
	return s.loadCheckpointMeta()
}

// beyondMax is every batch id past coverage.MaxBatchEnd.
var beyondMax = coverage.Range{Start: coverage.MaxBatchEnd, End: ^uint64(0)}

// checkpointable is pending without the batches past coverage.MaxBatchEnd.
// Record refuses them now, but a store written before it did may hold
// some. They stay covered (the sink acknowledged them) and are left out of
// every checkpoint, which the durable tier would refuse, so they cannot
// block the ones after: the durable tier lags on them, which is safe.
func (s *Store) checkpointable(d coverage.Destination, pending coverage.RangeSet) coverage.RangeSet {
	if last, ok := pending.Last(); !ok || last.End <= coverage.MaxBatchEnd {
		return pending
	}
	beyond, _ := coverage.NewRangeSet(beyondMax)
	s.opts.Logger.Warn("local store holds batch ids past the durable tier's limit: they stay covered here "+
		"and are left out of checkpoints", "dir", s.opts.Dir, "destination", d.String(),
		"limit", uint64(coverage.MaxBatchEnd))
	return coverage.Gaps(&pending, &beyond)
}

func (s *Store) loadEntry(key, value []byte) error {
	if key[0] == kindPendingSince {
		d, rest, err := decodeDestinationKey(key)
		if err == nil && len(rest) != 0 {
			err = fmt.Errorf("key %x: %d trailing bytes", key, len(rest))
		}
		nanos, verr := decodeUint64(value)
		if err = errors.Join(err, verr); err != nil {
			return corruptError(s.opts.Dir, err)
		}
		s.state(d).pendingSince = time.Unix(0, int64(nanos))
		return nil
	}
	kind, d, start, err := decodeRangeKey(key)
	if err != nil {
		return corruptError(s.opts.Dir, err)
	}
	end, err := decodeUint64(value)
	if err != nil {
		return corruptError(s.opts.Dir, fmt.Errorf("key %x: %w", key, err))
	}
	r := coverage.Range{Start: start, End: end}
	if err := errors.Join(d.Validate(), r.Validate()); err != nil {
		return corruptError(s.opts.Dir, fmt.Errorf("key %x: %w", key, err))
	}
	set := &s.state(d).covered
	if kind == kindCheckpointed {
		set = &s.state(d).checkpointed
	}
	// Keys were written normalized; loading them in order appends.
	if m, _ := set.MergeRange(r, nil); len(m.Replaced) != 0 || m.Added != r.Len() {
		return corruptError(s.opts.Dir, fmt.Errorf("range %s of %s overlaps or touches another stored range", r, d))
	}
	return nil
}

func (s *Store) state(d coverage.Destination) *destState {
	st := s.dests[d]
	if st == nil {
		st = &destState{}
		s.dests[d] = st
		s.ordered = nil
	}
	return st
}

// scan calls fn for every key in [lower, upper), stopping at its first error.
func (s *Store) scan(lower, upper []byte, fn func(key, value []byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return corruptError(s.opts.Dir, err)
	}
	for valid := it.First(); valid; valid = it.Next() {
		value, err := it.ValueAndErr()
		if err == nil {
			err = fn(it.Key(), value)
		}
		if err != nil {
			_ = it.Close()
			return err
		}
	}
	if err := it.Close(); err != nil {
		return corruptError(s.opts.Dir, err)
	}
	return nil
}

func (s *Store) isEmpty() (bool, error) {
	empty := true
	err := s.scan(nil, nil, func(key, _ []byte) error {
		if !bytes.Equal(key, metaKey(metaFormat)) {
			empty = false
			return errStop
		}
		return nil
	})
	if errors.Is(err, errStop) {
		err = nil
	}
	return empty, err
}

var errStop = errors.New("stop")

// getMeta returns a meta value, or nil when it is not set.
func (s *Store) getMeta(name string) ([]byte, error) {
	v, closer, err := s.db.Get(metaKey(name))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, corruptError(s.opts.Dir, fmt.Errorf("reading %s: %w", name, err))
	}
	defer closer.Close()
	return bytes.Clone(v), nil
}

func (s *Store) getMetaJSON(name string, v any) (bool, error) {
	raw, err := s.getMeta(name)
	if err != nil || raw == nil {
		return false, err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return false, corruptError(s.opts.Dir, fmt.Errorf("%s: %w", name, err))
	}
	return true, nil
}
