package recovery

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
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
	// Held are the gaps of a sink that its gap states keep out of Replay
	// (refused, unrecoverable, waived), each with its decision: listed for
	// the owner to report, never replayed.
	Held []Gap `json:"held,omitempty"`
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

// TopicPartition names one partition of a topic (coverage.TopicPartition,
// where it now lives).
type TopicPartition = coverage.TopicPartition

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
	// TopicSinks are the named sinks per topic, in place of Sinks for the
	// topics that are its keys (coverage.SinksFor: an empty list names
	// none for its topic); the sinks with rows of a topic are still always
	// planned. Zero value: Sinks for every topic.
	TopicSinks map[string][]string
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
	// Select restricts the plan to the destinations it selects, and the
	// read of the durable tier to their partitions: the tier is read by
	// Select's Topic, Partition and Partitions, never by its Sink (a
	// partition's plan needs the reference's coverage and every sink's),
	// and only the selected destinations' tasks are kept, as Only keeps
	// them. The plan of a selection is the whole plan's tasks of those
	// destinations, the same ones (see Plan). Zero value: everything.
	Select durable.Filter
	// States are the gap states (package gapstate) that keep gaps out of
	// the plan: a sink's refused, unrecoverable and waived batches are no
	// task (CommittedGaps lists them), and a reopen returns them. Zero
	// value: Plan reads them from a tier that keeps them (durable.
	// StateStore); PlanCoverage uses none.
	States []gapstate.Event
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
	if err := validSinks(o.Sinks, o.TopicSinks); err != nil {
		return err
	}
	_, err := extentsByPartition(o.Extents)
	return err
}

// validSinks refuses a named sink no record could carry: it is planned as
// a destination, and the queries refuse it too.
func validSinks(sinks []string, perTopic map[string][]string) error {
	if err := coverage.ValidateNamedSinks(sinks, perTopic); err != nil {
		return fmt.Errorf("recovery: PlanOptions.Sinks or TopicSinks: %w", err)
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
// report every partition as a hole in it); a plan of a Select finds it
// when its selection has rows. It needs no lease: a single worker is the
// only claimant.
//
// Plan reads only what Select selects: a partition's plan depends only on
// its own destinations, and on which sinks have rows of its topic (each is
// planned there), which a tier that implements SinkLister lists without a
// read of their coverage; another tier is read by the selection's whole
// topic instead (or all of it, for partitions of several topics).
func Plan(ctx context.Context, t durable.Tier, opts PlanOptions) ([]Task, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	tasks, _, err := planHeld(ctx, t, opts)
	return tasks, err
}

// planHeld is Plan, returning apart the gaps the tier's states hold out of
// the tasks, in the order planCoverage meets them.
func planHeld(ctx context.Context, t durable.Tier, opts PlanOptions) ([]Task, []Gap, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, nil, err
	}
	in, err := readPlan(ctx, t, opts)
	if err != nil {
		return nil, nil, err
	}
	return planCoverage(in, opts)
}

// PlanCoverage is Plan over coverage already read (all of a tier's
// destinations, as Coverage with an empty filter returns them): the one
// definition the gap metrics share. opts is used as it is, without
// EnsureDefaults; its Select and Only restrict the plan as Plan's do.
func PlanCoverage(all map[coverage.Destination]*coverage.RangeSet, opts PlanOptions) ([]Task, error) {
	tasks, _, err := PlanCoverageHeld(all, opts)
	return tasks, err
}

// planCoverage plans the partitions opts.Select selects of in.all, each
// against every sink with rows of its topic (in.all's, in.listed's) and
// every sink opts names for its topic (coverage.SinksFor).
// Every step is linear in in.all and the tasks (and a sort). It returns
// the tasks and, apart, the gaps its states hold out of them.
func planCoverage(in planInput, opts PlanOptions) ([]Task, []Gap, error) {
	selected := partitionsOf(opts.Select)
	keep := opts.Select.Matcher()
	if opts.Only != nil {
		selects := keep
		keep = func(d coverage.Destination) bool { return selects(d) && opts.Only(d) }
	}
	// One pass over the coverage: each selected partition's reference and
	// the hull of its sinks (see sinkHulls).
	parts := make(map[TopicPartition]partPlan, len(in.all)/2)
	for d, set := range in.all {
		if d.Sink != opts.Reference {
			in.addSink(d) // of every partition read: a topic's sinks
		}
		if !selected(d) {
			continue
		}
		tp := d.TopicPartition()
		p := parts[tp]
		if d.Sink == opts.Reference {
			p.ref = set
		} else {
			p.hull = widen(p.hull, set)
		}
		parts[tp] = p
	}
	extents, err := extentsByPartition(opts.Extents)
	if err != nil {
		return nil, nil, err
	}
	for tp := range extents {
		if _, ok := parts[tp]; !ok && selected(coverage.Destination{Topic: tp.Topic, Partition: tp.Partition}) {
			parts[tp] = partPlan{}
		}
	}
	// Each topic's sinks, deduplicated once: per partition they would cost
	// a sort of the topic's every (sink, partition).
	sinksOf := map[string][]string{}
	// Tasks per sink, each in destination and batch order as the loop
	// makes them: joined in sink order they need no sort.
	bySink := map[string][]Task{}
	none := new(coverage.RangeSet)
	for _, tp := range slices.SortedFunc(maps.Keys(parts), compareTopicPartition) {
		p := parts[tp]
		ref := cmp.Or(p.ref, none)
		d := coverage.Destination{Sink: opts.Reference, Topic: tp.Topic, Partition: tp.Partition}
		if err := d.Validate(); err != nil {
			return nil, nil, coverage.DestinationError("plan", d, err)
		}
		if keep(d) {
			holes, err := ReferenceHoles(ref, p.hull, extents[tp])
			if err != nil {
				return nil, nil, fmt.Errorf("recovery: plan %s: source extent [%d,%d): %w", d, extents[tp].Start, extents[tp].End, err)
			}
			bySink[d.Sink] = appendGapTasks(bySink[d.Sink], d, KindVerifyReference, &holes)
		}
		sinks, ok := sinksOf[tp.Topic]
		if !ok {
			sinks = uniq(append(slices.Clone(coverage.SinksFor(tp.Topic, opts.Sinks, opts.TopicSinks)), in.sinksOf(tp.Topic)...))
			sinksOf[tp.Topic] = sinks
		}
		for _, sink := range sinks {
			target := d.WithSink(sink)
			if sink == opts.Reference || !keep(target) {
				continue
			}
			covered := cmp.Or(in.all[target], none)
			gaps := coverage.Gaps(ref, covered)
			gaps = in.hold(target, opts.Reference, covered, &gaps)
			bySink[sink] = appendGapTasks(bySink[sink], target, KindReplay, &gaps)
		}
	}
	var tasks []Task
	for _, sink := range slices.Sorted(maps.Keys(bySink)) {
		tasks = append(tasks, bySink[sink]...)
	}
	// One task per gap so far, bounded by the table's rows; only now, in
	// order, are they cut to MaxBatches, up to MaxTasks.
	tasks, err = cut(tasks, opts.MaxBatches, opts.MaxTasks)
	return tasks, in.held, err
}

func compareTopicPartition(a, b TopicPartition) int { return a.Compare(b) }

// gapTasks is one task of kind per range of gaps, in order.
func gapTasks(d coverage.Destination, kind TaskKind, gaps *coverage.RangeSet) []Task {
	return appendGapTasks(nil, d, kind, gaps)
}

// appendGapTasks is tasks with gapTasks(d, kind, gaps) appended.
func appendGapTasks(tasks []Task, d coverage.Destination, kind TaskKind, gaps *coverage.RangeSet) []Task {
	for r := range gaps.All() {
		tasks = append(tasks, Task{Destination: d, Range: r, Kind: kind})
	}
	return tasks
}

// partPlan is what a plan knows of one partition before its sinks: the
// reference's coverage (nil: no rows) and the hull of the other sinks'
// (zero: none).
type partPlan struct {
	ref  *coverage.RangeSet
	hull coverage.Range
}

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}
