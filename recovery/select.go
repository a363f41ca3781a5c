package recovery

// How a plan reads only what it is asked: the partitions of its selection,
// and which sinks its topics have.

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// SinkLister is the optional capability of a durable.Tier, found by type
// assertion, that lists which sinks have rows of each topic without reading
// their coverage. A plan of a few partitions needs it: every sink with rows
// of a topic is planned on each of its partitions, those it has no rows of
// too (a sink that never wrote a partition lacks all of it). Without it,
// Plan reads the selection's whole topic.
type SinkLister interface {
	// TopicSinks returns, for each of topics that has rows (for none
	// given, every topic), the sinks with rows of it. A sink listed that
	// has none (a race with a write) costs a plan its gaps; one left out
	// would hide them, so a tier never leaves out a sink that had rows when
	// TopicSinks was called.
	TopicSinks(ctx context.Context, topics []string) (map[string][]string, error)
}

// planInput is what a plan is made of: the coverage of (at least) every
// destination of the partitions it plans, and the sinks of their topics a
// SinkLister listed (planCoverage adds those of the coverage).
type planInput struct {
	all    map[coverage.Destination]*coverage.RangeSet
	listed map[string][]string
	// seen are the sinks other than the reference with rows in all of each
	// topic, as planCoverage's pass over all meets them.
	seen map[string]map[string]struct{}
	// states are the gap states of the partitions read (nil: none), and
	// held the gaps they keep out of the plan, as planCoverage finds them.
	states map[TopicPartition][]gapstate.Event
	held   []Gap
}

// addSink notes d's sink as one of its topic's.
func (in *planInput) addSink(d coverage.Destination) {
	if in.seen == nil {
		in.seen = map[string]map[string]struct{}{}
	}
	sinks := in.seen[d.Topic]
	if sinks == nil {
		sinks = map[string]struct{}{}
		in.seen[d.Topic] = sinks
	}
	sinks[d.Sink] = struct{}{}
}

// sinksOf are topic's sinks, listed or met, some maybe twice.
func (in *planInput) sinksOf(topic string) []string {
	return append(slices.Collect(maps.Keys(in.seen[topic])), in.listed[topic]...)
}

func hasSink(all map[coverage.Destination]*coverage.RangeSet, sink string) bool {
	for d := range all {
		if d.Sink == sink {
			return true
		}
	}
	return false
}

// partitionsOf selects the destinations of the partitions f selects, of
// every sink: f without its Sink.
func partitionsOf(f durable.Filter) func(coverage.Destination) bool {
	f.Sink = ""
	return f.Matcher()
}

// restrictsPartitions reports whether f selects only some partitions of
// the topics it selects.
func restrictsPartitions(f durable.Filter) bool {
	return f.Partition != nil || len(f.Partitions) > 0
}

// selectedTopics are the topics f selects, sorted; nil when they are not
// known from f (it names no topic).
func selectedTopics(f durable.Filter) []string {
	if f.Topic != "" {
		return []string{f.Topic}
	}
	if len(f.Partitions) == 0 {
		return nil
	}
	set := map[string]bool{}
	for _, tp := range f.Partitions {
		set[tp.Topic] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// readPlan reads what a plan of opts.Select needs: its partitions'
// coverage and their topics' sinks.
func readPlan(ctx context.Context, t durable.Tier, opts PlanOptions) (planInput, error) {
	sel := opts.Select
	read := durable.Filter{Topic: sel.Topic, Partition: sel.Partition, Partitions: sel.Partitions}
	lister, canList := t.(SinkLister)
	var listed map[string][]string
	switch {
	case !restrictsPartitions(read):
		// Whole topics (or everything): the read holds their sinks.
	case canList:
		var err error
		if listed, err = lister.TopicSinks(ctx, selectedTopics(sel)); err != nil {
			return planInput{}, fmt.Errorf("recovery: plan: the sinks of the selected topics: %w", err)
		}
	default:
		// The whole topic holds its sinks; partitions of several topics
		// are read with everything else (a SinkLister reads less).
		read = durable.Filter{}
		if topics := selectedTopics(sel); len(topics) == 1 {
			read.Topic = topics[0]
		}
	}
	all, err := t.Coverage(ctx, read)
	if err != nil {
		return planInput{}, fmt.Errorf("recovery: plan: %w", err)
	}
	in := planInput{all: all, listed: listed, states: byPartition(opts.States)}
	if opts.States == nil {
		if in.states, err = readStates(ctx, t, read); err != nil {
			return planInput{}, err
		}
	}
	if len(all) == 0 || hasSink(all, opts.Reference) {
		return in, nil
	}
	// Rows, none of the reference: an error only if the whole tier has
	// none, not just this selection (a partition whose raw records were
	// all lost is one whole hole).
	missing, sinks, err := noReference(ctx, t, read, all, opts.Reference)
	if err != nil {
		return planInput{}, err
	}
	if missing {
		return planInput{}, &NoReferenceError{Reference: opts.Reference, Sinks: sinks}
	}
	return in, nil
}

// noReference reports whether the tier has no rows of reference, read
// having found rows (all) but none of it, and then the sinks it has.
func noReference(ctx context.Context, t durable.Tier, read durable.Filter, all map[coverage.Destination]*coverage.RangeSet, reference string) (bool, []string, error) {
	if lister, ok := t.(SinkLister); ok {
		every, err := lister.TopicSinks(ctx, nil)
		if err != nil {
			return false, nil, fmt.Errorf("recovery: plan: the sinks of every topic: %w", err)
		}
		set := map[string]bool{}
		for _, sinks := range every {
			for _, s := range sinks {
				set[s] = true
			}
		}
		return !set[reference], slices.Sorted(maps.Keys(set)), nil
	}
	if read.Topic == "" && !restrictsPartitions(read) {
		return true, sinkNames(all), nil
	}
	refs, err := t.Coverage(ctx, durable.Filter{Sink: reference})
	if err != nil {
		return false, nil, fmt.Errorf("recovery: plan: the reference's rows: %w", err)
	}
	return len(refs) == 0, sinkNames(all), nil
}
