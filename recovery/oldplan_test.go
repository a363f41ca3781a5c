package recovery

import (
	"maps"
	"slices"

	"github.com/covmirror/covmirror/coverage"
)

// oldPlanCoverage is PlanCoverage as it was before plans read only their
// selection: every destination planned, each partition's sinks sorted
// from a list of one entry per (sink, partition) of its topic (quadratic
// in a topic's partitions), then filtered by only. The readers' tests use
// it as the model and the benchmark as the baseline.
func oldPlanCoverage(all map[coverage.Destination]*coverage.RangeSet, opts PlanOptions) ([]Task, error) {
	refs := map[TopicPartition]*coverage.RangeSet{}
	sinksOf := map[string][]string{}
	for d, set := range all {
		if d.Sink == opts.Reference {
			refs[d.TopicPartition()] = set
		} else {
			sinksOf[d.Topic] = append(sinksOf[d.Topic], d.Sink)
		}
	}
	if len(all) > 0 && len(refs) == 0 {
		return nil, &NoReferenceError{Reference: opts.Reference, Sinks: sinkNames(all)}
	}
	hulls := sinkHulls(all, opts.Reference)
	for tp := range hulls {
		if refs[tp] == nil {
			refs[tp] = new(coverage.RangeSet)
		}
	}
	extents, err := extentsByPartition(opts.Extents)
	if err != nil {
		return nil, err
	}
	for tp := range extents {
		if refs[tp] == nil {
			refs[tp] = new(coverage.RangeSet)
		}
	}
	var tasks []Task
	for _, tp := range slices.SortedFunc(maps.Keys(refs), compareTopicPartition) {
		ref := refs[tp]
		d := coverage.Destination{Sink: opts.Reference, Topic: tp.Topic, Partition: tp.Partition}
		holes, err := ReferenceHoles(ref, hulls[tp], extents[tp])
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, gapTasks(d, KindVerifyReference, &holes)...)
		for _, sink := range uniq(append(slices.Clone(opts.Sinks), sinksOf[d.Topic]...)) {
			if sink == opts.Reference {
				continue
			}
			target := d.WithSink(sink)
			covered := all[target]
			if covered == nil {
				covered = new(coverage.RangeSet)
			}
			gaps := coverage.Gaps(ref, covered)
			tasks = append(tasks, gapTasks(target, KindReplay, &gaps)...)
		}
	}
	if opts.Only != nil {
		tasks = slices.DeleteFunc(tasks, func(t Task) bool { return !opts.Only(t.Destination) })
	}
	sortTasks(tasks)
	return cut(tasks, opts.MaxBatches, opts.MaxTasks)
}
