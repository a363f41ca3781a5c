package object

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// positionsDir is where, under Options.Prefix, the positions objects live,
// beside "sinks/": the Tier lists only "sinks/", so it never sees them.
const positionsDir = "positions/"

// positionsKey is the key of source's positions object: the same safe
// mapping as a sink's (sinkKey), under positionsDir.
func positionsKey(prefix, source string) string {
	return prefix + positionsDir + strings.TrimPrefix(sinkKey("", source), sinksDir)
}

// Positions keeps stored source positions as a coverage.PositionStore on
// the same Blobs as the sink objects: one small object per source, under
// "positions/" (Options.Prefix before it), holding per partition the set
// of distinct positions saved.
//
// A save reads the source's object, adds the position to the set and
// writes the result only if the object is still the version it read
// (If-Match; If-None-Match: * to create), as a checkpoint does a sink's
// object: a lost race or a write of unknown outcome re-reads and re-adds,
// so positions saved by concurrent owners all survive (union, never
// last-write-wins), and a retried save adds nothing. An object that cannot
// be read is never overwritten. SavePositions does the same once per
// source for all of that source's positions, so a checkpoint writes each
// source's object once.
//
// # Bounds
//
// Each partition keeps its highest MaxPositionsPerPartition positions by
// (batch, cursor), within MaxPositionBytesPerPartition cursor bytes; the
// lowest are dropped first. coverage.ResumePosition chooses the greatest
// stored batch that raw's coverage reaches without a gap, so dropping any
// stored positions can only make it choose an earlier one or none (the
// source then starts from its beginning): a lag, which costs a replay,
// never a lead. A position that would be dropped at once (the partition
// already keeps as many higher ones) is not written.
//
// Positions is safe for concurrent use, and any number of them, in any
// number of processes, may share one Blobs location.
type Positions struct {
	store *Tier // for its options, reads and backoff; never writes a sink
	gate  *coverage.PositionGate
}

var _ coverage.PositionStore = (*Positions)(nil)

// OpenPositions returns a Positions over opts.Blobs for the configured
// sources. Every source needs a name and a regime, and names must be
// unique; only Stored sources' positions are kept. It does no I/O.
func OpenPositions(ctx context.Context, opts Options, sources ...coverage.Source) (*Positions, error) {
	gate, err := coverage.NewPositionGate(sources)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Positions{store: s, gate: gate}, nil
}

// Name names the location: the Blobs location and the prefix.
func (p *Positions) Name() string { return p.store.Name() }

// SavePosition implements coverage.PositionStore.
func (p *Positions) SavePosition(ctx context.Context, pos coverage.Position) error {
	return p.SavePositions(ctx, []coverage.Position{pos})[0]
}

var _ coverage.PositionBatcher = (*Positions)(nil)

// SavePositions implements coverage.PositionBatcher: each source's object
// is read and written once for all of its positions in ps, under the same
// conditional write as one position's. A checkpoint's positions of 100
// partitions of one source are one write of the source's object, not 100
// rewrites of it.
func (p *Positions) SavePositions(ctx context.Context, ps []coverage.Position) []error {
	const op = "save position"
	errs := make([]error, len(ps))
	bySource := map[string][]int{}
	var sources []string
	for i, pos := range ps {
		if err := p.gate.CheckSave(ctx, pos, MaxCursorLen); err != nil {
			errs[i] = err
			continue
		}
		if _, ok := bySource[pos.Source]; !ok {
			sources = append(sources, pos.Source)
		}
		bySource[pos.Source] = append(bySource[pos.Source], i)
	}
	for _, source := range sources {
		idx := bySource[source]
		batch := make([]coverage.Position, len(idx))
		for k, i := range idx {
			batch[k] = ps[i]
		}
		err := p.write(ctx, source, batch)
		for _, i := range idx {
			errs[i] = coverage.DestinationError(op, coverage.Destination{Topic: ps[i].Source, Partition: ps[i].Partition}, err)
		}
	}
	return errs
}

// write adds ps, all of source, to source's object until a conditional
// write lands, or the object is found to hold them already (a write whose
// answer was lost landed) or to keep as many higher positions as the
// bounds allow.
func (p *Positions) write(ctx context.Context, source string, ps []coverage.Position) error {
	s := p.store
	key := positionsKey(s.opts.Prefix, source)
	var last error
	for attempt := 1; ; attempt++ {
		o, version, err := p.read(ctx, key, source)
		switch {
		case errors.Is(err, ErrCorruptObject) || errors.Is(err, ErrUnknownVersion):
			return err
		case err != nil:
			last = err
		case !o.addAll(ps):
			return nil
		default:
			_, err = s.opts.Blobs.Put(ctx, key, encodePositions(o), version)
			if err == nil {
				s.stats.writes.Add(1)
				return nil
			}
			if errors.Is(err, ErrPrecondition) {
				s.stats.preconditions.Add(1)
			} else {
				s.stats.unknown.Add(1)
				s.opts.Logger.Warn("object: position write of unknown outcome; reading it back", "key", key, "attempt", attempt, "err", err)
			}
			last = fmt.Errorf("write %s of %s: %w", key, s.opts.Blobs.Name(), err)
		}
		if attempt >= s.opts.MaxAttempts {
			return fmt.Errorf("%w: %d attempts: %w", coverage.ErrUnavailable, attempt, last)
		}
		if err := s.sleep(ctx, attempt); err != nil {
			return fmt.Errorf("%s: %w (after: %w)", key, err, last)
		}
	}
}

// read returns source's positions object under key and its version; an
// empty object and version "" when there is none. An unreadable object is
// ErrCorruptObject or ErrUnknownVersion and is left as it is; a failed Get
// is coverage.ErrUnavailable.
func (p *Positions) read(ctx context.Context, key, source string) (*positionsObject, string, error) {
	b := p.store.opts.Blobs
	data, version, err := b.Get(ctx, key)
	if errors.Is(err, ErrNotFound) {
		return &positionsObject{Source: source}, "", nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("%w: read %s of %s: %w", coverage.ErrUnavailable, key, b.Name(), err)
	}
	o, err := decodePositions(data)
	if err != nil {
		return nil, "", fmt.Errorf("%s of %s (left as it is): %w", key, b.Name(), err)
	}
	if o.Source != source {
		return nil, "", fmt.Errorf("%s of %s (left as it is): %w: it holds source %q, another key's", key, b.Name(), ErrCorruptObject, o.Source)
	}
	return o, version, nil
}

// addAll adds every position of ps to o and reports whether o changed.
func (o *positionsObject) addAll(ps []coverage.Position) bool {
	changed := false
	for _, pos := range ps {
		if o.add(pos) {
			changed = true
		}
	}
	return changed
}

// add merges pos into o and applies the bounds. It reports whether o
// changed: false when o holds pos already, or pos is dropped at once.
func (o *positionsObject) add(pos coverage.Position) bool {
	i, ok := slices.BinarySearchFunc(o.Partitions, pos.Partition, comparePartition)
	if !ok {
		o.Partitions = slices.Insert(o.Partitions, i, partitionPositions{Partition: pos.Partition})
	}
	pp := &o.Partitions[i]
	entry := coverage.Position{Batch: pos.Batch, Cursor: slices.Clone(pos.Cursor)}
	j, found := slices.BinarySearchFunc(pp.Positions, entry, coverage.ComparePositions)
	if found {
		return false
	}
	pp.Positions = slices.Insert(pp.Positions, j, entry)
	if drop := prune(pp.Positions); drop > j {
		// Dropped with the lowest: nothing changes (and a new, empty
		// partition was never in o). Taken out again, as o may still be
		// written for a batch's other positions (addAll).
		pp.Positions = slices.Delete(pp.Positions, j, j+1)
		return false
	} else if drop > 0 {
		pp.Positions = slices.Delete(pp.Positions, 0, drop)
	}
	return true
}

func comparePartition(p partitionPositions, part int32) int { return cmp.Compare(p.Partition, part) }

// prune returns how many of the lowest positions of a sorted list to drop
// so that the rest fit MaxPositionsPerPartition and
// MaxPositionBytesPerPartition; the highest is always kept.
func prune(ps []coverage.Position) int {
	keep, size := 0, 0
	for i := len(ps) - 1; i >= 0; i-- {
		size += len(ps[i].Cursor)
		if keep > 0 && (keep == MaxPositionsPerPartition || size > MaxPositionBytesPerPartition) {
			break
		}
		keep++
	}
	return len(ps) - keep
}

// Positions implements coverage.PositionStore: the positions kept for the
// source's partition, ordered by coverage.ComparePositions.
func (p *Positions) Positions(ctx context.Context, source string, partition int32) ([]coverage.Position, error) {
	const op = "positions"
	if err := p.gate.Check(ctx, op, source, partition); err != nil {
		return nil, err
	}
	dest := coverage.Destination{Topic: source, Partition: partition}
	o, _, err := p.read(ctx, positionsKey(p.store.opts.Prefix, source), source)
	if err != nil {
		return nil, coverage.DestinationError(op, dest, err)
	}
	out := []coverage.Position{}
	i, ok := slices.BinarySearchFunc(o.Partitions, partition, comparePartition)
	if ok {
		for _, pos := range o.Partitions[i].Positions {
			out = append(out, coverage.Position{Source: source, Partition: partition, Cursor: pos.Cursor, Batch: pos.Batch})
		}
	}
	return out, nil
}

// Stats counts what this Positions wrote since OpenPositions: Writes are
// positions objects written, Preconditions and Unknown the conditional
// writes refused or of unknown outcome; the other counters stay zero.
func (p *Positions) Stats() Stats { return p.store.Stats() }

// Close implements coverage.PositionStore. It does not close the Blobs,
// which the caller opened and may share with a Tier.
func (p *Positions) Close() error {
	p.gate.Close()
	return nil
}
