package demo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/covmirror/covmirror/coverage"
)

// ErrSinkDown is a simulated store refusing a write: nothing was stored.
var ErrSinkDown = errors.New("sink unavailable")

// Store is a simulated destination store (raw or a sink): the batches it
// durably holds per (topic, partition), and how many repeated writes its
// dedup absorbed. Its contents are the truth the invariant is checked
// against.
type Store struct {
	Name  string
	held  map[coverage.Destination]*coverage.RangeSet
	Dups  uint64      // repeated batch-writes its dedup absorbed
	Down  func() bool // writes fail while it returns true; nil: never
	Fails int         // writes refused
}

// NewStore returns an empty store named name.
func NewStore(name string) *Store {
	return &Store{Name: name, held: map[coverage.Destination]*coverage.RangeSet{}}
}

// Write stores r durably (the sink's ack is a nil return), deduplicating.
func (s *Store) Write(d coverage.Destination, r coverage.Range) error {
	if s.Down != nil && s.Down() {
		s.Fails++
		return fmt.Errorf("%w: %s", ErrSinkDown, s.Name)
	}
	d = d.WithSink(s.Name)
	set := s.held[d]
	if set == nil {
		set = new(coverage.RangeSet)
		s.held[d] = set
	}
	m, err := set.MergeRange(r, nil)
	if err != nil {
		return err
	}
	s.Dups += r.Len() - m.Added
	return nil
}

// Holds is what the store holds of d's topic and partition. The caller must
// not change it.
func (s *Store) Holds(d coverage.Destination) *coverage.RangeSet {
	if set := s.held[d.WithSink(s.Name)]; set != nil {
		return set
	}
	return new(coverage.RangeSet)
}

// Outages are an intermittent sink's down times, by stream step: from a
// seeded generator, so that a seed replays the same run.
type Outages struct {
	Step int
	down map[int]bool
}

// NewOutages draws outages over steps 1..steps: about one in 40 steps starts
// one of 2-11 steps.
func NewOutages(r *rand.Rand, steps int) *Outages {
	o := &Outages{down: map[int]bool{}}
	for step := 1; step <= steps; step++ {
		if r.IntN(40) == 0 {
			for n := range 2 + r.IntN(10) {
				o.down[step+n] = true
			}
		}
	}
	return o
}

// IsDown reports whether the current step is in an outage.
func (o *Outages) IsDown() bool { return o.down[o.Step] }

// Pipeline is the simulated ingest: a source acked once raw holds a batch,
// then every sink written; the owner records each write after its ack.
type Pipeline struct {
	Topic      string
	Partitions int32
	Raw        *Store
	Sinks      []*Store
	Acked      map[int32]uint64 // per partition, the last batch acked to the source
	AckedEnd   map[int32]uint64 // per partition, the batch after the last one acked; 0: none acked
	// RecordFailed is told of a write that succeeded but whose record
	// failed (coverage then lags the sink). A nil return goes on; nil
	// RecordFailed: the failure is returned.
	RecordFailed func(error) error
}

// NewPipeline is a pipeline on topic with partitions, raw and the sinks
// named, nothing acked yet.
func NewPipeline(topic string, partitions int32, sinks ...string) *Pipeline {
	p := &Pipeline{Topic: topic, Partitions: partitions, Raw: NewStore(coverage.RawSink), Acked: map[int32]uint64{}, AckedEnd: map[int32]uint64{}}
	for _, s := range sinks {
		p.Sinks = append(p.Sinks, NewStore(s))
	}
	return p
}

// Destination is raw's destination for partition.
func (p *Pipeline) Destination(partition int32) coverage.Destination {
	return coverage.Destination{Sink: coverage.RawSink, Topic: p.Topic, Partition: partition}
}

// Process ingests batch b of every partition through owner.
func (p *Pipeline) Process(ctx context.Context, owner coverage.Store, b uint64) error {
	for part := range p.Partitions {
		if _, err := p.Ingest(ctx, owner, part, b); err != nil {
			return err
		}
	}
	return nil
}

// Ingest writes batch b of partition to raw, acks the source, then writes
// it to every sink, recording each write after its ack. A failed sink
// write is left as a gap; a failed raw write leaves the batch unacked
// (acked is false) for the source to send again.
func (p *Pipeline) Ingest(ctx context.Context, owner coverage.Store, part int32, b uint64) (acked bool, err error) {
	d, r := p.Destination(part), coverage.Range{Start: b, End: b + 1}
	if err := p.writeThenRecord(ctx, owner, d, r, func(context.Context) error { return p.Raw.Write(d, r) }); err != nil {
		if errors.Is(err, ErrSinkDown) {
			return false, nil
		}
		return false, err
	}
	p.Acked[part] = max(p.Acked[part], b)
	p.AckedEnd[part] = max(p.AckedEnd[part], b+1)
	for _, s := range p.Sinks {
		if err := p.writeThenRecord(ctx, owner, d.WithSink(s.Name), r, func(context.Context) error { return s.Write(d, r) }); err != nil && !errors.Is(err, ErrSinkDown) {
			return true, err
		}
	}
	return true, nil
}

// writeThenRecord is coverage.WriteThenRecord with RecordFailed applied to
// a record that failed after its write succeeded.
func (p *Pipeline) writeThenRecord(ctx context.Context, owner coverage.Store, d coverage.Destination, r coverage.Range, write func(context.Context) error) error {
	err := coverage.WriteThenRecord(ctx, owner, d, r, write)
	var ce *coverage.Error
	if err != nil && p.RecordFailed != nil && errors.As(err, &ce) && ce.Op == "record after write" {
		return p.RecordFailed(err)
	}
	return err
}

// Replay copies r of d's partition from raw to d's sink (or, for raw
// itself, confirms raw holds it); the sink's ack is a nil return. Like a
// real replay it reads raw, so it fails for batches raw does not hold.
func (p *Pipeline) Replay(d coverage.Destination, r coverage.Range) error {
	if !p.Raw.Holds(d).ContainsRange(r) {
		return fmt.Errorf("replay %s %s: raw lacks batches of it (holds %s)", d, r, p.Raw.Holds(d))
	}
	if d.Sink == coverage.RawSink {
		return nil
	}
	if s := p.Store(d.Sink); s != nil {
		return s.Write(d, r)
	}
	return fmt.Errorf("replay %s %s: unknown sink %q", d, r, d.Sink)
}

// SinkNames is raw's name and every sink's.
func (p *Pipeline) SinkNames() []string {
	names := []string{coverage.RawSink}
	for _, s := range p.Sinks {
		names = append(names, s.Name)
	}
	return names
}

// Store is the store named sink (raw included), or nil.
func (p *Pipeline) Store(sink string) *Store {
	if sink == coverage.RawSink {
		return p.Raw
	}
	for _, s := range p.Sinks {
		if s.Name == sink {
			return s
		}
	}
	return nil
}
