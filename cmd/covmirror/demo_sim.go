package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/covmirror/covmirror/coverage"
)

// The demo's simulated pipeline. Its stores keep their own contents, which
// the demo's verdict checks coverage against.

var errSinkDown = errors.New("sink unavailable")

// simStore is a simulated destination store (raw or a sink): the batches
// it durably holds per (topic, partition), and how many repeated writes its
// dedup absorbed.
type simStore struct {
	name  string
	held  map[coverage.Destination]*coverage.RangeSet
	dups  uint64
	down  func() bool // writes fail while it returns true; nil: never
	fails int
}

func newSimStore(name string) *simStore {
	return &simStore{name: name, held: map[coverage.Destination]*coverage.RangeSet{}}
}

// write stores r durably (the sink's ack is a nil return), deduplicating.
func (s *simStore) write(d coverage.Destination, r coverage.Range) error {
	if s.down != nil && s.down() {
		s.fails++
		return fmt.Errorf("%w: %s", errSinkDown, s.name)
	}
	d = d.WithSink(s.name)
	set := s.held[d]
	if set == nil {
		set = new(coverage.RangeSet)
		s.held[d] = set
	}
	m, err := set.MergeRange(r, nil)
	if err != nil {
		return err
	}
	s.dups += r.Len() - m.Added
	return nil
}

func (s *simStore) holds(d coverage.Destination) *coverage.RangeSet {
	if set := s.held[d.WithSink(s.name)]; set != nil {
		return set
	}
	return new(coverage.RangeSet)
}

// outages are the intermittent sink's down times, by stream step: from a
// seeded generator, so that a seed replays the same run.
type outages struct {
	step int
	down map[int]bool
}

func newOutages(r *rand.Rand, steps int) *outages {
	o := &outages{down: map[int]bool{}}
	for step := 1; step <= steps; step++ {
		if r.IntN(40) == 0 {
			for n := range 2 + r.IntN(10) {
				o.down[step+n] = true
			}
		}
	}
	return o
}

func (o *outages) isDown() bool { return o.down[o.step] }

// pipeline is the simulated ingest: a source acked once raw holds a batch,
// then every sink written; the owner records each write after its ack.
type pipeline struct {
	topic      string
	partitions int32
	raw        *simStore
	sinks      []*simStore
	acked      map[int32]uint64 // per partition, the last batch acked to the source
}

func (p *pipeline) destination(partition int32) coverage.Destination {
	return coverage.Destination{Sink: coverage.RawSink, Topic: p.topic, Partition: partition}
}

// process ingests batch b of every partition through owner: raw first, the
// source ack, then the sinks. A failed sink write is left as a gap.
func (p *pipeline) process(ctx context.Context, owner coverage.Store, b uint64) error {
	for part := range p.partitions {
		d, r := p.destination(part), coverage.Range{Start: b, End: b + 1}
		if err := coverage.WriteThenRecord(ctx, owner, d, r, func(context.Context) error { return p.raw.write(d, r) }); err != nil {
			return err
		}
		p.acked[part] = b
		for _, s := range p.sinks {
			err := coverage.WriteThenRecord(ctx, owner, d.WithSink(s.name), r, func(context.Context) error { return s.write(d, r) })
			if err != nil && !errors.Is(err, errSinkDown) {
				return err
			}
		}
	}
	return nil
}

// replay copies r of d's partition from raw to d's sink (or, for raw
// itself, confirms raw holds it); the sink's ack is a nil return.
func (p *pipeline) replay(d coverage.Destination, r coverage.Range) error {
	if d.Sink == coverage.RawSink {
		if !p.raw.holds(d).ContainsRange(r) {
			return fmt.Errorf("raw lacks %s %s", d, r)
		}
		return nil
	}
	if s := p.store(d.Sink); s != nil {
		return s.write(d, r)
	}
	return fmt.Errorf("unknown sink %q", d.Sink)
}

func (p *pipeline) sinkNames() []string {
	names := []string{coverage.RawSink}
	for _, s := range p.sinks {
		names = append(names, s.name)
	}
	return names
}
