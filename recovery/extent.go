package recovery

import (
	"fmt"

	"github.com/covmirror/covmirror/coverage"
)

// ReferenceHoles is what ref, the reference's committed coverage of one
// (topic, partition), lacks of the span the reference must hold. It is the
// one definition Plan, Resume, CommittedGaps, the gap metrics and the
// coverage map look for raw's holes by.
//
// The span is the hull of three things:
//
//   - ref's own first to last covered batch;
//   - sinks, the hull of every other destination's coverage of the
//     partition (zero: none): a sink is written only once raw is durable, so
//     raw held every batch a sink holds;
//   - extent, the source's acked extent (coverage.Extent; an empty one, the
//     zero Extent included, adds nothing): the pipeline acks the source
//     only once raw is durable, so raw holds every batch of it, and a lost
//     record of a stream's first or last stretch is a hole too.
//
// Extents only ever widen the span: a hole found without an extent is
// found with any extent too, so an over-reported extent costs a
// verification (raw is read back, and only what it holds is recorded),
// never a hidden hole or a claimed batch.
func ReferenceHoles(ref *coverage.RangeSet, sinks coverage.Range, extent coverage.Extent) (coverage.RangeSet, error) {
	var span coverage.Range
	have := false
	extend := func(r coverage.Range) {
		if r.Start >= r.End {
			return
		}
		if !have {
			span, have = r, true
			return
		}
		span = coverage.Range{Start: min(span.Start, r.Start), End: max(span.End, r.End)}
	}
	if first, ok := ref.First(); ok {
		last, _ := ref.Last()
		extend(coverage.Range{Start: first.Start, End: last.End})
	}
	extend(sinks)
	if r, ok := extent.Range(); ok {
		extend(r)
	}
	if !have {
		return coverage.RangeSet{}, nil
	}
	set, err := coverage.NewRangeSet(span)
	if err != nil {
		return coverage.RangeSet{}, err
	}
	return coverage.Gaps(&set, ref), nil
}

// extentsByPartition validates es (coverage.ValidateExtents) and indexes
// them by partition.
func extentsByPartition(es []coverage.Extent) (map[TopicPartition]coverage.Extent, error) {
	valid, err := coverage.ValidateExtents(es)
	if err != nil {
		return nil, fmt.Errorf("recovery: source extents: %w", err)
	}
	out := make(map[TopicPartition]coverage.Extent, len(valid))
	for _, e := range valid {
		out[TopicPartition{Topic: e.Topic, Partition: e.Partition}] = e
	}
	return out, nil
}
