package mirror

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
)

// Assignment is what a new owner of a partition learns from the durable
// table for one sink: what is committed as covered, and what to replay (the
// leading, inner and trailing gaps against the reference sink).
type Assignment struct {
	Destination coverage.Destination `json:"destination"`
	Covered     []coverage.Range     `json:"covered"`
	Replay      []coverage.Range     `json:"replay"`
}

// ResumeOptions says what a new owner of a partition knows besides the
// durable table.
type ResumeOptions struct {
	// Reference is raw's sink name. Zero value: coverage.RawSink.
	Reference string
	// Sinks are the sinks the owner writes. Required.
	Sinks []string
	// SourceAckedEnd, when not zero, is the batch id after the last one the
	// source has acknowledged (a broker's committed offset, as a batch id).
	// The pipeline acks only once raw is durable, so raw holds every batch
	// below it even where raw's own coverage was not yet checkpointed: the
	// sinks' share of that stretch is replay work too.
	SourceAckedEnd uint64
}

// Resume is what a new owner of (topic, partition) reads after a rebalance:
// only the durable table, never the previous owner's local tier, which it
// cannot see. Coverage the previous owner recorded but had not checkpointed
// shows up as replay work (a lag that dedup absorbs), never as covered.
func Resume(ctx context.Context, t *iceberg.Table, topic string, partition int32, opts ResumeOptions) ([]Assignment, error) {
	if opts.Reference == "" {
		opts.Reference = coverage.RawSink
	}
	all, err := t.Coverage(ctx, iceberg.Filter{Topic: topic, Partition: &partition})
	if err != nil {
		return nil, fmt.Errorf("mirror: resume %s/%d: %w", topic, partition, err)
	}
	var ref coverage.RangeSet
	if committed := all[coverage.Destination{Sink: opts.Reference, Topic: topic, Partition: partition}]; committed != nil {
		ref = committed.Clone()
	}
	if opts.SourceAckedEnd > 0 {
		first, ok := ref.First()
		if !ok || first.Start >= opts.SourceAckedEnd {
			first = coverage.Range{}
		}
		if err := ref.Add(coverage.Range{Start: first.Start, End: opts.SourceAckedEnd}); err != nil {
			return nil, fmt.Errorf("mirror: resume %s/%d: source acked end %d: %w", topic, partition, opts.SourceAckedEnd, err)
		}
	}
	out := make([]Assignment, 0, len(opts.Sinks))
	for _, sink := range opts.Sinks {
		d := coverage.Destination{Sink: sink, Topic: topic, Partition: partition}
		if err := d.Validate(); err != nil {
			return nil, coverage.NewError("resume", d, coverage.Range{}, err)
		}
		covered := all[d]
		if covered == nil {
			covered = new(coverage.RangeSet)
		}
		gaps := coverage.Gaps(&ref, covered)
		out = append(out, Assignment{Destination: d, Covered: covered.Ranges(), Replay: gaps.Ranges()})
	}
	return out, nil
}

// Task is one unit of replay: batches of Range to read from raw and write to
// Destination's sink.
type Task struct {
	Destination coverage.Destination `json:"destination"`
	Range       coverage.Range       `json:"range"`
}

// PlanOptions configures Plan. Zero values are documented defaults.
type PlanOptions struct {
	// Reference is raw's sink name. Zero value: coverage.RawSink.
	Reference string
	// MaxBatches caps a task's size. Zero value: 10,000.
	MaxBatches uint64
	// Sinks are the sinks every reference topic and partition is written
	// to. Zero value: for each topic, the sinks the table has rows of for
	// that topic (a sink that never wrote a topic at all is then unknown:
	// name it here).
	Sinks []string
}

// Plan is the single recovery worker's plan, from committed coverage only:
// for every sink and destination, the reference's ranges the sink lacks,
// ordered by destination and batch and split into tasks of at most
// MaxBatches. It needs no lease: a single worker is the only claimant.
func Plan(ctx context.Context, t *iceberg.Table, opts PlanOptions) ([]Task, error) {
	if opts.Reference == "" {
		opts.Reference = coverage.RawSink
	}
	if opts.MaxBatches == 0 {
		opts.MaxBatches = 10_000
	}
	all, err := t.Coverage(ctx, iceberg.Filter{})
	if err != nil {
		return nil, fmt.Errorf("mirror: plan: %w", err)
	}
	sinksOf := map[string][]string{} // topic -> sinks
	for d := range all {
		if d.Sink != opts.Reference {
			sinksOf[d.Topic] = append(sinksOf[d.Topic], d.Sink)
		}
	}
	var tasks []Task
	for d, ref := range all {
		if d.Sink != opts.Reference {
			continue
		}
		sinks := opts.Sinks
		if len(sinks) == 0 {
			sinks = sinksOf[d.Topic]
		}
		for _, sink := range uniq(sinks) {
			target := d.WithSink(sink)
			covered := all[target]
			if covered == nil {
				covered = new(coverage.RangeSet)
			}
			gaps := coverage.Gaps(ref, covered)
			tasks = append(tasks, Split(target, &gaps, opts.MaxBatches)...)
		}
	}
	slices.SortFunc(tasks, func(a, b Task) int {
		if c := a.Destination.Compare(b.Destination); c != 0 {
			return c
		}
		return cmp.Compare(a.Range.Start, b.Range.Start)
	})
	return tasks, nil
}

// Split cuts gaps into tasks of at most maxBatches each, in order.
func Split(d coverage.Destination, gaps *coverage.RangeSet, maxBatches uint64) []Task {
	var out []Task
	for r := range gaps.All() {
		for start := r.Start; start < r.End; {
			end := r.End
			if end-start > maxBatches {
				end = start + maxBatches
			}
			out = append(out, Task{Destination: d, Range: coverage.Range{Start: start, End: end}})
			start = end
		}
	}
	return out
}

func uniq(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// Replayer replays one task: it reads the task's batches from raw and writes
// them to the task's sink, returning nil only after the sink's durable
// acknowledgement.
type Replayer interface {
	Replay(ctx context.Context, task Task) error
}

// ReplayFunc adapts a function to Replayer.
type ReplayFunc func(ctx context.Context, task Task) error

// Replay implements Replayer.
func (f ReplayFunc) Replay(ctx context.Context, task Task) error { return f(ctx, task) }

// Recover drives tasks in order through the replayer and records each one's
// coverage in store (a Mirror, typically) right after its ack. It stops at
// the first failure and returns how many tasks completed; the failed task
// and those after it stay gaps, so planning again finds them.
func Recover(ctx context.Context, tasks []Task, r Replayer, store coverage.Store) (done int, err error) {
	for _, task := range tasks {
		err := coverage.WriteThenRecord(ctx, store, task.Destination, task.Range, func(ctx context.Context) error {
			return r.Replay(ctx, task)
		})
		if err != nil {
			return done, fmt.Errorf("mirror: recovery task %s %s: %w", task.Destination, task.Range, err)
		}
		done++
	}
	return done, nil
}
