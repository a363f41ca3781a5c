package recovery

import (
	"context"
	"slices"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// PlanHeld is Plan, also returning the gaps the gap states hold out of the
// tasks (kinds refused, unrecoverable and waived, each with its decision),
// in sink, topic, partition and start order: for a reader that shows every
// missing batch once, as the coverage map does. Waived gaps are included;
// a list for operators leaves them out unless asked (GapsFilter.All).
func PlanHeld(ctx context.Context, t durable.Tier, opts PlanOptions) ([]Task, []Gap, error) {
	tasks, held, err := planHeld(ctx, t, opts)
	slices.SortStableFunc(held, compareGaps)
	return tasks, held, err
}

// PlanCoverageHeld is PlanCoverage, also returning the gaps opts.States
// hold out of the tasks, as PlanHeld does: the one definition the gap
// metrics count by kind.
func PlanCoverageHeld(all map[coverage.Destination]*coverage.RangeSet, opts PlanOptions) ([]Task, []Gap, error) {
	if err := validSinks(opts.Sinks, opts.TopicSinks); err != nil {
		return nil, nil, err
	}
	in := planInput{all: all, states: byPartition(opts.States)}
	if len(all) > 0 && !hasSink(all, opts.Reference) {
		return nil, nil, &NoReferenceError{Reference: opts.Reference, Sinks: sinkNames(all)}
	}
	tasks, held, err := planCoverage(in, opts)
	slices.SortStableFunc(held, compareGaps)
	return tasks, held, err
}
