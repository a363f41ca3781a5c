package recovery

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
)

// RefusedError is a Replayer's error meaning the sink refused the task's
// batches for ever (a schema violation, a 400, a constraint): replaying
// them again would loop. With RecoverOptions.States, Recover records them
// as refused and carries on; without, it stops as at any failed replay.
type RefusedError struct {
	// Reason is the sink's own words; Recover keeps them, cleaned of
	// control characters and cut to gapstate.MaxReasonLen.
	Reason string
	// Ranges are the refused batches, each inside the task's range. Nil:
	// the whole task. The rest of the task stays a gap.
	Ranges []coverage.Range
}

func (e *RefusedError) Error() string {
	// The reason is the sink's own words (an answer's body, say): quoted,
	// so that no control character or line of it reaches a log as is.
	return fmt.Sprintf("the sink refused the batches for ever: %q", fitReason(e.Reason, refusedReason))
}

// UnrecoverableError is a Replayer's error meaning raw no longer holds
// Ranges (its retention expired them, an object was lost): no replay can
// close them. With RecoverOptions.States, Recover records them as
// unrecoverable and carries on; without, it stops as at any failed replay.
type UnrecoverableError struct {
	// Ranges are the batches raw lacks, each inside the task's range.
	// Required: an empty list is a bad answer. The rest of the task stays
	// a gap.
	Ranges []coverage.Range
	// Reason says what the replay found. Zero value: "raw no longer holds
	// these batches".
	Reason string
}

func (e *UnrecoverableError) Error() string {
	return fmt.Sprintf("raw no longer holds %s: %q", rangesText(e.Ranges), fitReason(e.Reason, unrecoverableReason))
}

const (
	refusedReason       = "the sink refused these batches permanently"
	unrecoverableReason = "raw no longer holds these batches"
)

// StateRecorder records gap states: a durable.StateStore is one.
type StateRecorder interface {
	AppendStates(ctx context.Context, events []gapstate.Event) error
}

// RecoverOptions configures RecoverStates. The zero value is Recover.
type RecoverOptions struct {
	// States records the refused and unrecoverable batches a Replayer
	// reports (RefusedError, UnrecoverableError), so that they leave the
	// plan instead of looping. Nil: such an error stops Recover like any
	// failed replay.
	States StateRecorder
	// By names the decider in the events: the recovery worker. Required
	// with States.
	By string
	// Now is the events' clock. Zero value: time.Now.
	Now func() time.Time
}

// Outcome is what RecoverStates did.
type Outcome struct {
	// Done counts the tasks done (recorded as covered or verified).
	Done int
	// Held counts the replay tasks whose batches were recorded in a state
	// instead: never covered, never counted in Done.
	Held int
	// States are the events recorded, in task order.
	States []gapstate.Event
}

// heldEvents turns a replay's refusal or loss into the events to record
// for task; ok is false for an error of neither kind. A range that is not
// inside the task, or a loss naming no range, is a bad answer: an error,
// nothing recorded.
func heldEvents(task Task, err error, opts RecoverOptions) (events []gapstate.Event, ok bool, bad error) {
	var state gapstate.State
	var ranges []coverage.Range
	var reason string
	var refused *RefusedError
	var lost *UnrecoverableError
	switch {
	case errors.As(err, &refused):
		state, ranges, reason = gapstate.Refused, refused.Ranges, fitReason(refused.Reason, refusedReason)
		if ranges == nil {
			ranges = []coverage.Range{task.Range}
		}
	case errors.As(err, &lost):
		state, ranges, reason = gapstate.Unrecoverable, lost.Ranges, fitReason(lost.Reason, unrecoverableReason)
		if len(ranges) == 0 {
			return nil, true, errors.New("the replayer reported batches raw lacks without naming them: nothing recorded")
		}
	default:
		return nil, false, nil
	}
	for _, r := range ranges {
		if verr := r.Validate(); verr != nil {
			return nil, true, fmt.Errorf("the replayer reported %s %w: nothing recorded", state, verr)
		}
		if r.Start < task.Range.Start || r.End > task.Range.End {
			return nil, true, fmt.Errorf("the replayer reported %s %s, outside the task's range: nothing recorded", state, r)
		}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	at := now().UTC().Truncate(time.Microsecond) // what every tier keeps
	for _, r := range ranges {
		events = append(events, gapstate.Event{ID: gapstate.NewID(), Destination: task.Destination, Range: r,
			State: state, Reason: reason, By: opts.By, At: at})
	}
	return events, true, nil
}

// fitReason is reason made fit for an event (gapstate.Event.Validate):
// control characters other than newline and tab become spaces, invalid
// UTF-8 is replaced, and it is cut to gapstate.MaxReasonLen on a character
// boundary; blank, it is def.
func fitReason(reason, def string) string {
	reason = strings.ToValidUTF8(reason, "\uFFFD")
	reason = strings.Map(func(c rune) rune {
		if unicode.IsControl(c) && c != '\n' && c != '\t' {
			return ' '
		}
		return c
	}, reason)
	if strings.TrimSpace(reason) == "" {
		return def
	}
	if len(reason) > gapstate.MaxReasonLen {
		cut := gapstate.MaxReasonLen
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut]
	}
	return reason
}

func rangesText(ranges []coverage.Range) string {
	if len(ranges) == 0 {
		return "batches it did not name"
	}
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = r.String()
	}
	return strings.Join(parts, ", ")
}

// hold records a replay's refusal or loss as states (see RecoverStates);
// handled is false when err is neither, or no recorder is configured.
func hold(ctx context.Context, task Task, err error, opts RecoverOptions) (events []gapstate.Event, handled bool, herr error) {
	if opts.States == nil {
		return nil, false, nil
	}
	events, ok, bad := heldEvents(task, err, opts)
	if !ok {
		return nil, false, nil
	}
	if bad != nil {
		return nil, true, fmt.Errorf("%w (the replay: %w)", bad, err)
	}
	// The replay's answer is in: finish recording even if ctx ends now.
	if aerr := opts.States.AppendStates(context.WithoutCancel(ctx), events); aerr != nil {
		return nil, true, fmt.Errorf("recording %d %s state(s) (the replay: %w): %w; the task stays a gap, planned again", len(events), events[0].State, err, aerr)
	}
	return events, true, nil
}
