package recovery

import (
	"context"
	"fmt"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// Resume is what a new owner of (topic, partition) reads after a rebalance:
// only the durable tier, never the previous owner's local tier, which it
// cannot see. Coverage the previous owner recorded but had not checkpointed
// shows up as recovery work (a lag that dedup absorbs), never as covered.
//
// The first assignment is always the reference's (Kind verify-reference):
// its holes in the span raw must hold, from the lowest to the highest batch
// covered by any destination of the partition in the table (the reference
// or a sink: a sink is written only once raw is durable) and, with the
// partition's extent in Extents, over the whole extent too
// (ReferenceHoles). Then one assignment (Kind replay) per other sink of
// Sinks, in order, against the reference's committed coverage only: a
// sink's share of a reference hole is replay work once the hole is
// verified and re-recorded, on the next Resume or Plan.
//
// A rebalancing owner knows the broker's committed position of each
// partition it is handed: it passes it, mapped to a batch id, as the
// extent's End, so batches raw durably holds but whose records were lost
// with the previous pod are verified (then, on the next Resume or Plan,
// replayed), not silently skipped.
func Resume(ctx context.Context, t durable.Tier, topic string, partition int32, opts ResumeOptions) ([]Assignment, error) {
	tp := TopicPartition{Topic: topic, Partition: partition}
	byTP, err := resume(ctx, t, []TopicPartition{tp}, opts, durable.Filter{Topic: topic, Partition: &partition})
	if err != nil {
		return nil, err
	}
	return byTP[tp], nil
}

// ResumePartitions is Resume of every partition of tps at once, as an owner
// handed many partitions in one rebalance needs it: one read of the durable
// tier, selecting exactly those partitions (durable.Filter.Partitions),
// and for each partition the assignments Resume of it alone returns. A
// partition listed twice is resumed once; none listed reads nothing.
func ResumePartitions(ctx context.Context, t durable.Tier, tps []TopicPartition, opts ResumeOptions) (map[TopicPartition][]Assignment, error) {
	if len(tps) == 0 {
		// An empty Partitions filter would select everything.
		return map[TopicPartition][]Assignment{}, nil
	}
	return resume(ctx, t, tps, opts, durable.Filter{Partitions: tps})
}

// resume reads read once and resumes each of tps from it.
func resume(ctx context.Context, t durable.Tier, tps []TopicPartition, opts ResumeOptions, read durable.Filter) (map[TopicPartition][]Assignment, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	for _, tp := range tps {
		if err := validResume(tp, opts); err != nil {
			return nil, err
		}
	}
	all, err := t.Coverage(ctx, read)
	if err != nil {
		if len(tps) == 1 {
			return nil, fmt.Errorf("recovery: resume %s/%d: %w", tps[0].Topic, tps[0].Partition, err)
		}
		return nil, fmt.Errorf("recovery: resume of %d partitions: %w", len(tps), err)
	}
	states, err := readStates(ctx, t, read)
	if err != nil {
		return nil, err
	}
	hulls := sinkHulls(all, opts.Reference)
	extents, _ := extentsByPartition(opts.Extents) // validated
	out := make(map[TopicPartition][]Assignment, len(tps))
	for _, tp := range tps {
		if _, done := out[tp]; done {
			continue
		}
		as, err := resumeOne(all, states, hulls[tp], extents[tp], tp, opts)
		if err != nil {
			return nil, err
		}
		out[tp] = as
	}
	return out, nil
}

// validResume refuses a partition no destination of opts could name.
func validResume(tp TopicPartition, opts ResumeOptions) error {
	ref := coverage.Destination{Sink: opts.Reference, Topic: tp.Topic, Partition: tp.Partition}
	if err := ref.Validate(); err != nil {
		return coverage.DestinationError("resume", ref, err)
	}
	for _, sink := range opts.Sinks {
		if d := ref.WithSink(sink); sink != opts.Reference {
			if err := d.Validate(); err != nil {
				return coverage.DestinationError("resume", d, err)
			}
		}
	}
	return nil
}

// resumeOne is Resume of tp from all, which holds (at least) every
// destination of tp; hull is the sinks' hull there (sinkHulls).
func resumeOne(all map[coverage.Destination]*coverage.RangeSet, states map[TopicPartition][]gapstate.Event, hull coverage.Range, extent coverage.Extent, tp TopicPartition, opts ResumeOptions) ([]Assignment, error) {
	refDest := coverage.Destination{Sink: opts.Reference, Topic: tp.Topic, Partition: tp.Partition}
	committed := all[refDest]
	if committed == nil {
		committed = new(coverage.RangeSet)
	}
	holes, err := ReferenceHoles(committed, hull, extent)
	if err != nil {
		return nil, fmt.Errorf("recovery: resume %s/%d: source extent [%d,%d): %w", tp.Topic, tp.Partition, extent.Start, extent.End, err)
	}
	// The sinks' reference is raw's committed coverage only: a hole, even
	// below the acked end, is raw's to verify first (an over-reported end
	// would otherwise hand the sinks batches raw never held); the sinks'
	// share follows on a later Resume or Plan, once raw's verification
	// re-recorded what raw holds.
	ref := committed
	out := []Assignment{{Destination: refDest, Kind: KindVerifyReference, Covered: committed.Ranges(), Replay: holes.Ranges()}}
	for _, sink := range opts.Sinks {
		if sink == opts.Reference {
			continue
		}
		d := refDest.WithSink(sink)
		covered := all[d]
		if covered == nil {
			covered = new(coverage.RangeSet)
		}
		gaps := coverage.Gaps(ref, covered)
		// Gaps in a state (refused, unrecoverable, waived) are no replay
		// work: listed apart, as Plan leaves them out of its tasks.
		in := planInput{states: states}
		gaps = in.hold(d, opts.Reference, covered, &gaps)
		out = append(out, Assignment{Destination: d, Kind: KindReplay, Covered: covered.Ranges(), Replay: gaps.Ranges(), Held: in.held})
	}
	return out, nil
}
