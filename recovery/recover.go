package recovery

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// ErrNoReference: the durable tier has rows, but none of the reference
// sink, so nothing can be measured against it (a misspelled --reference, or
// raw's coverage never checkpointed at all).
var ErrNoReference = errors.New("the reference sink has no rows in the durable tier")

// NoReferenceError is Plan's error for a reference without rows: it names
// the reference and the sinks the table does have. It wraps ErrNoReference.
type NoReferenceError struct {
	Reference string
	Sinks     []string // the sinks the table has rows of, sorted
}

func (e *NoReferenceError) Error() string {
	return fmt.Sprintf("recovery: plan: reference sink %q: %v, which has rows of the sinks %s: name the sink raw's coverage is recorded under",
		e.Reference, ErrNoReference, coverage.Names(e.Sinks))
}

func (e *NoReferenceError) Unwrap() error { return ErrNoReference }

// ErrCannotVerifyReference: Recover met verify-reference tasks and its
// Replayer does not implement ReferenceVerifier, so it left them undone.
var ErrCannotVerifyReference = errors.New("the replayer cannot verify the reference (it does not implement recovery.ReferenceVerifier)")

func sinkNames(all map[coverage.Destination]*coverage.RangeSet) []string {
	set := map[string]bool{}
	for d := range all {
		set[d.Sink] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// sinkHulls is, per topic and partition, the hull of the coverage of every
// destination in all but the reference's (absent: none has any): batches
// some sink holds, which raw therefore held.
func sinkHulls(all map[coverage.Destination]*coverage.RangeSet, reference string) map[TopicPartition]coverage.Range {
	hulls := map[TopicPartition]coverage.Range{}
	for d, set := range all {
		if d.Sink == reference {
			continue
		}
		tp := TopicPartition{Topic: d.Topic, Partition: d.Partition}
		if hull := widen(hulls[tp], set); hull.Start < hull.End {
			hulls[tp] = hull
		}
	}
	return hulls
}

// widen is hull stretched over set's first to last covered batch; a zero
// hull is none yet.
func widen(hull coverage.Range, set *coverage.RangeSet) coverage.Range {
	first, ok := set.First()
	if !ok {
		return hull
	}
	last, _ := set.Last()
	if hull.Start >= hull.End {
		return coverage.Range{Start: first.Start, End: last.End}
	}
	return coverage.Range{Start: min(hull.Start, first.Start), End: max(hull.End, last.End)}
}

// Replayer replays one task: it reads the task's batches from raw and writes
// them to the task's sink, returning nil only after the sink's durable
// acknowledgement.
type Replayer interface {
	Replay(ctx context.Context, task Task) error
}

// ReferenceVerifier is an optional capability of a Replayer, found by type
// assertion: it can read the reference (raw) itself. VerifyReference returns
// the ranges of task.Range that task.Destination's sink (the reference)
// durably holds for its topic and partition, as read back from it now (not
// as anyone's record says), and nil for none. Every range returned must lie
// inside task.Range; Recover records them for task.Destination.
type ReferenceVerifier interface {
	VerifyReference(ctx context.Context, task Task) ([]coverage.Range, error)
}

// ReplayFunc adapts a function to Replayer. It has no ReferenceVerifier
// capability.
type ReplayFunc func(ctx context.Context, task Task) error

// Replay implements Replayer.
func (f ReplayFunc) Replay(ctx context.Context, task Task) error { return f(ctx, task) }

// Recover drives tasks in order and records each one's coverage in store (a
// Mirror, typically) right after it is done. done counts the tasks done.
//
// A replay task is done once the replayer returned nil (the sink's ack);
// its range is recorded for its sink. Recover stops at the first failed
// replay; that task and those after it stay gaps, so planning again finds
// them. RecoverStates also records refusals and losses and carries on.
//
// A verify-reference task needs the replayer to implement
// ReferenceVerifier. It is done once VerifyReference returned: exactly the
// ranges it returned are recorded for the reference, never the rest of the
// task's range, which stays a hole that the next Plan reports again (raw
// lacking batches inside its own span is then for a person to look into). A
// failed or out-of-range verification stops Recover like a failed replay.
// A replayer without the capability leaves every verify-reference task
// undone and not counted; Recover carries on with the other tasks and then
// returns an error wrapping ErrCannotVerifyReference that says how many.
func Recover(ctx context.Context, tasks []Task, r Replayer, store coverage.Store) (done int, err error) {
	out, err := RecoverStates(ctx, tasks, r, store, RecoverOptions{})
	return out.Done, err
}

// RecoverStates is Recover that, with opts.States, records what a replay
// cannot close as gap states and carries on with the next task: a replay
// failing with a *RefusedError records its batches refused, one failing
// with an *UnrecoverableError records the ranges it names unrecoverable
// (found with errors.As). Neither is ever recorded as coverage, and the
// rest of such a task stays a plain gap. A named range outside the task,
// or a loss naming none, is a bad answer: nothing is recorded and Recover
// stops, as it does when the states cannot be recorded (the task stays a
// gap, planned and replayed again: a second copy of a decision is
// harmless). Every other error stops it as in Recover.
func RecoverStates(ctx context.Context, tasks []Task, r Replayer, store coverage.Store, opts RecoverOptions) (out Outcome, err error) {
	if opts.States != nil && strings.TrimSpace(opts.By) == "" {
		return out, errors.New("recovery: RecoverOptions.By is empty: name the recovery worker that records the gap states")
	}
	verifier, canVerify := r.(ReferenceVerifier)
	unverified := 0
	for _, task := range tasks {
		switch task.Kind {
		case KindReplay, "":
			err = coverage.WriteThenRecord(ctx, store, task.Destination, task.Range, func(ctx context.Context) error {
				return r.Replay(ctx, task)
			})
			if err != nil {
				events, handled, herr := hold(ctx, task, err, opts)
				if handled && herr == nil {
					out.Held++
					out.States = append(out.States, events...)
					continue
				}
				if handled {
					err = herr
				}
			}
		case KindVerifyReference:
			if !canVerify {
				unverified++
				continue
			}
			err = verifyReference(ctx, verifier, task, store)
		default:
			err = fmt.Errorf("unknown task kind %q (want %q or %q)", task.Kind, KindReplay, KindVerifyReference)
		}
		if err != nil {
			return out, fmt.Errorf("recovery: recovery task %s %s %s: %w", task.Kind, task.Destination, task.Range, err)
		}
		out.Done++
	}
	if unverified > 0 {
		return out, fmt.Errorf("recovery: recovery left %d verify-reference task(s) undone: %w; their holes stay open", unverified, ErrCannotVerifyReference)
	}
	return out, nil
}

// verifyReference records for the reference exactly what the verifier says
// raw holds within the task's range, after checking all of it first, so a
// bad answer records nothing.
func verifyReference(ctx context.Context, v ReferenceVerifier, task Task, store coverage.Store) error {
	if err := coverage.ValidateRecord(task.Destination, task.Range); err != nil {
		return err
	}
	held, err := v.VerifyReference(ctx, task)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	for _, h := range held {
		if err := h.Validate(); err != nil {
			return fmt.Errorf("verifier returned %w", err)
		}
		if h.Start < task.Range.Start || h.End > task.Range.End {
			return fmt.Errorf("verifier returned %s, outside the task's range: nothing recorded", h)
		}
	}
	for _, h := range held {
		// The read-back happened: finish recording even if ctx ends now.
		if err := store.Record(context.WithoutCancel(ctx), task.Destination, h); err != nil {
			return fmt.Errorf("record verified %s: %w", h, err)
		}
	}
	return nil
}
