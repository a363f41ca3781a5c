package recovery

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// TaskKind says what recovering a task means.
type TaskKind string

const (
	// KindReplay: read the task's batches from the reference (raw) and
	// write them to the task's sink. The zero Kind means this too.
	KindReplay TaskKind = "replay"
	// KindVerifyReference: the task's range is a hole in the reference's
	// own coverage (raw's record of those batches was lost: a failed local
	// write, a pod lost before its checkpoint). Recovery verifies which of
	// those batches raw really holds and records exactly those for the
	// reference; the sinks' gaps there show up on the next Plan, measured
	// against the re-recorded reference.
	KindVerifyReference TaskKind = "verify-reference"
)

// Task is one unit of recovery on Destination's Range: a replay into a sink,
// or a verification of the reference itself (Kind says which).
type Task struct {
	Destination coverage.Destination `json:"destination"`
	Range       coverage.Range       `json:"range"`
	Kind        TaskKind             `json:"kind"`
}

// Assignment is what a new owner of a partition learns from the durable
// table for one sink: what is committed as covered, and what to recover. For
// a sink (Kind replay) Replay holds the leading, inner and trailing gaps
// against the reference; for the reference itself (Kind verify-reference)
// it holds the reference's holes, to verify rather than replay.
type Assignment struct {
	Destination coverage.Destination `json:"destination"`
	Kind        TaskKind             `json:"kind"`
	Covered     []coverage.Range     `json:"covered"`
	Replay      []coverage.Range     `json:"replay"`
}

// Tasks cuts a's Replay into tasks of a's Kind of at most maxBatches each
// (zero: one task per range), ready for Recover, and at most maxTasks of
// them, the first ones (zero or negative: no limit), with an error wrapping
// ErrPlanTruncated past it, as Plan does.
func (a Assignment) Tasks(maxBatches uint64, maxTasks int) ([]Task, error) {
	set, _ := coverage.NewRangeSet(a.Replay...) // Resume's ranges are valid
	return cut(gapTasks(a.Destination, a.Kind, &set), maxBatches, maxTasks)
}

// ResumeOptions says what a new owner of a partition knows besides the
// durable tier. Zero values are documented defaults.
type ResumeOptions struct {
	// Reference is raw's sink name. Zero value: coverage.RawSink.
	Reference string
	// Sinks are the sinks the owner writes. Required. Naming the reference
	// among them is allowed and changes nothing: its assignment is always
	// returned, first.
	Sinks []string
	// Extents are source acked extents (coverage.Extent): the one of the
	// resumed (topic, partition), if given, widens where the reference's
	// holes are looked for to the whole of it (below its start too, and past
	// its end). Those holes are verify-reference work for the reference
	// only: the sinks' replay is measured against the reference's committed
	// coverage, so their share of a hole follows on a later Resume or Plan,
	// once the verification re-recorded what raw holds (an over-reported
	// extent then costs a verification, never a claimed batch). Extents of
	// other partitions are ignored, so an owner
	// may pass the extents of all its partitions to each Resume. Zero
	// value: none known.
	Extents []coverage.Extent
}

// EnsureDefaults fills in zero values.
func (o *ResumeOptions) EnsureDefaults() {
	if o.Reference == "" {
		o.Reference = coverage.RawSink
	}
}

// Validate reports invalid Extents (coverage.ValidateExtents); the names
// are checked with the topic and partition by Resume.
func (o *ResumeOptions) Validate() error {
	_, err := extentsByPartition(o.Extents)
	return err
}

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
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	refDest := coverage.Destination{Sink: opts.Reference, Topic: topic, Partition: partition}
	if err := refDest.Validate(); err != nil {
		return nil, coverage.DestinationError("resume", refDest, err)
	}
	all, err := t.Coverage(ctx, durable.Filter{Topic: topic, Partition: &partition})
	if err != nil {
		return nil, fmt.Errorf("recovery: resume %s/%d: %w", topic, partition, err)
	}
	committed := all[refDest]
	if committed == nil {
		committed = new(coverage.RangeSet)
	}
	tp := TopicPartition{topic, partition}
	extents, _ := extentsByPartition(opts.Extents) // validated
	extent := extents[tp]
	holes, err := ReferenceHoles(committed, sinkHulls(all, opts.Reference)[tp], extent)
	if err != nil {
		return nil, fmt.Errorf("recovery: resume %s/%d: source extent [%d,%d): %w", topic, partition, extent.Start, extent.End, err)
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
		if err := d.Validate(); err != nil {
			return nil, coverage.DestinationError("resume", d, err)
		}
		covered := all[d]
		if covered == nil {
			covered = new(coverage.RangeSet)
		}
		gaps := coverage.Gaps(ref, covered)
		out = append(out, Assignment{Destination: d, Kind: KindReplay, Covered: covered.Ranges(), Replay: gaps.Ranges()})
	}
	return out, nil
}

// TopicPartition names one partition of a topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// PlanOptions configures Plan. Zero values are documented defaults.
type PlanOptions struct {
	// Reference is raw's sink name. Zero value: coverage.RawSink.
	Reference string
	// MaxBatches caps a task's size. Zero value: DefaultMaxBatches.
	MaxBatches uint64
	// MaxTasks caps how many tasks one Plan returns: a hole of 10^18
	// batches (one stray record far from the rest) is 10^14 tasks of
	// 10,000, more than any memory holds. Past it Plan takes MaxTasks
	// tasks in turn from every destination with work, in destination order
	// (each destination's first task, then each one's second, ...), so one
	// destination's huge hole never starves another's work, and returns
	// them in order with an error wrapping ErrPlanTruncated: recover those
	// and plan again. Zero value: DefaultMaxTasks. Negative:
	// no cap, for a plan with MaxBatches at least as large as any gap,
	// which holds one task per gap (what the table's rows already bound).
	MaxTasks int
	// Sinks are sinks every reference topic and partition is written to,
	// besides the sinks the table has rows of for each topic (those are
	// always planned, so naming sinks never hides one). The planner learns a
	// topic's sinks from its rows only: a sink without a row of a topic it
	// writes (a topic lost on every destination, known from its extent) is
	// unknown unless named here. Zero value: only the sinks with rows.
	Sinks []string
	// Extents are the source's acked extents (coverage.Extent), where
	// known: a partition's reference holes are then looked for over its
	// whole extent too (ReferenceHoles), and a partition with an extent but
	// no rows at all is one whole hole. Zero value: none known, so holes
	// are found between the lowest and the highest batch any destination of
	// the partition covers.
	Extents []coverage.Extent
	// Only keeps the tasks of the destinations it selects, dropped before
	// the plan is cut to MaxTasks, so a filtered plan is never emptied by
	// other destinations' work (the holes are still looked for over every
	// destination's coverage). Zero value: every destination.
	Only func(coverage.Destination) bool
}

// PlanOptions' defaults.
const (
	DefaultMaxBatches = 10_000
	DefaultMaxTasks   = 100_000
)

// EnsureDefaults fills in zero values.
func (o *PlanOptions) EnsureDefaults() {
	if o.Reference == "" {
		o.Reference = coverage.RawSink
	}
	if o.MaxBatches == 0 {
		o.MaxBatches = DefaultMaxBatches
	}
	if o.MaxTasks == 0 {
		o.MaxTasks = DefaultMaxTasks
	}
}

// Validate reports invalid Extents (coverage.ValidateExtents); a reference
// without rows is ErrNoReference, found against the table by Plan.
func (o *PlanOptions) Validate() error {
	if err := validSinks(o.Sinks); err != nil {
		return err
	}
	_, err := extentsByPartition(o.Extents)
	return err
}

// validSinks refuses a named sink no record could carry: it is planned as
// a destination, and the queries refuse it too.
func validSinks(sinks []string) error {
	for _, sink := range sinks {
		if err := (coverage.Destination{Sink: sink, Topic: "t"}).Validate(); err != nil {
			return fmt.Errorf("recovery: PlanOptions.Sinks: %q: %w", sink, err)
		}
	}
	return nil
}

// Plan is the single recovery worker's plan, from committed coverage only,
// ordered by destination and batch and split into tasks of at most
// MaxBatches:
//
//   - for the reference, its holes (Kind verify-reference): per topic and
//     partition with rows of any sink, what it lacks between the lowest and
//     the highest batch any destination there covers, the reference or a
//     sink (a sink is written only once raw is durable, so raw held every
//     batch a sink holds; a partition only sinks have rows of is one whole
//     hole) and, where Extents gives the partition's acked extent, over
//     all of it (ReferenceHoles);
//   - for every other sink, the reference's ranges the sink lacks (Kind
//     replay), against the reference as committed: a sink's share of a
//     reference hole becomes a task only once the hole is verified and
//     re-recorded, on a later Plan.
//
// A table that has rows but none of the reference is an error wrapping
// ErrNoReference (a misspelled reference would otherwise plan nothing, or
// report every partition as a hole in it). It
// needs no lease: a single worker is the only claimant.
func Plan(ctx context.Context, t durable.Tier, opts PlanOptions) ([]Task, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	all, err := t.Coverage(ctx, durable.Filter{})
	if err != nil {
		return nil, fmt.Errorf("recovery: plan: %w", err)
	}
	return PlanCoverage(all, opts)
}

// PlanCoverage is Plan over coverage already read (all of a tier's
// destinations, as Coverage with an empty filter returns them): the one
// definition the gap metrics share. opts is used as it is, without
// EnsureDefaults.
func PlanCoverage(all map[coverage.Destination]*coverage.RangeSet, opts PlanOptions) ([]Task, error) {
	if err := validSinks(opts.Sinks); err != nil {
		return nil, err
	}
	refs := map[TopicPartition]*coverage.RangeSet{}
	sinksOf := map[string][]string{} // topic -> sinks
	for d, set := range all {
		if d.Sink == opts.Reference {
			refs[TopicPartition{d.Topic, d.Partition}] = set
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
		if err := d.Validate(); err != nil {
			return nil, coverage.DestinationError("plan", d, err)
		}
		holes, err := ReferenceHoles(ref, hulls[tp], extents[tp])
		if err != nil {
			return nil, fmt.Errorf("recovery: plan %s: source extent [%d,%d): %w", d, extents[tp].Start, extents[tp].End, err)
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
	// One task per gap so far, bounded by the table's rows; only now, in
	// order, are they cut to MaxBatches, up to MaxTasks.
	sortTasks(tasks)
	return cut(tasks, opts.MaxBatches, opts.MaxTasks)
}

func compareTopicPartition(a, b TopicPartition) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}

// gapTasks is one task of kind per range of gaps, in order.
func gapTasks(d coverage.Destination, kind TaskKind, gaps *coverage.RangeSet) []Task {
	var out []Task
	for r := range gaps.All() {
		out = append(out, Task{Destination: d, Range: r, Kind: kind})
	}
	return out
}

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
