package gapstate

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/covmirror/covmirror/coverage"
)

// State is what a recorded decision says about a range of a destination.
type State string

const (
	// Refused: the sink refused these batches permanently (a schema
	// violation, a 400, a constraint); replaying them would loop. They
	// leave the replay plan until reopened or covered.
	Refused State = "refused"
	// Unrecoverable: raw no longer holds these batches, so no replay can
	// close the gap. An operator restores raw (then reopens) or waives.
	Unrecoverable State = "unrecoverable"
	// Waived: an operator accepted the loss, with a reason. Not alerted,
	// still never coverage, listed for audit.
	Waived State = "waived"
	// Reopened: an operator returned the range to the replay plan (after
	// fixing the sink, the data or raw). It is a decision, not a state a
	// gap stays in: Resolve leaves a reopened batch a plain gap.
	Reopened State = "reopened"
)

// States lists every State, in the order they are documented.
var States = []State{Refused, Unrecoverable, Waived, Reopened}

// ParseState returns the State named s.
func ParseState(s string) (State, error) {
	for _, st := range States {
		if string(st) == s {
			return st, nil
		}
	}
	return "", fmt.Errorf("%w: %q is not one of refused, unrecoverable, waived, reopened", ErrInvalidEvent, s)
}

// Bounds on the free text an event carries, in bytes.
const (
	MaxReasonLen = 4096
	MaxByLen     = 256
)

// ErrInvalidEvent is returned (wrapped) for an event no tier may hold.
var ErrInvalidEvent = errors.New("gapstate: invalid event")

// ErrIDTaken is returned (wrapped) for an event whose ID names another
// decision already: a store keeps one copy of an ID, so recording it would
// answer for a decision it does not keep.
var ErrIDTaken = errors.New("gapstate: the event ID names another decision")

// SameDecision reports whether a and b are copies of one decision: the same
// ID, destination, range, state and reason. A retry stamped again by its
// recorder differs only in At (or By): it is the same decision.
func SameDecision(a, b *Event) bool {
	return a.ID == b.ID && a.Destination == b.Destination && a.Range == b.Range && a.State == b.State && a.Reason == b.Reason
}

// SameCopy reports whether a and b are one copy of an event: the same
// decision by the same writer at the same time, At compared to the
// microsecond every tier keeps.
func SameCopy(a, b *Event) bool {
	return SameDecision(a, b) && a.By == b.By && a.At.Truncate(time.Microsecond).Equal(b.At.Truncate(time.Microsecond))
}

// Event is one recorded decision about Range of Destination.
type Event struct {
	// ID names the event uniquely; tiers keep one copy per ID, so a
	// retried write changes nothing. NewID makes one.
	ID string `json:"id"`
	// Destination and Range are embedded so that an event's JSON is flat:
	// {"id","sink","topic","partition","start","end","state","reason","by","at"}.
	coverage.Destination
	coverage.Range
	State State `json:"state"`
	// Reason says why, as the sink's error or the operator's words.
	// Required.
	Reason string `json:"reason"`
	// By names who decided: an operator, a pod, a job. Required.
	By string `json:"by"`
	// At is when, by the decider's clock; the latest decision about a
	// batch holds. Required.
	At time.Time `json:"at"`
}

// NewID returns a fresh random event ID (32 hex digits).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// Validate reports an event no tier may hold: a bad destination or range
// (as coverage.ValidateRecord), an unknown state, a missing or overlong
// reason or decider, free text that is not UTF-8 or holds control
// characters other than tab and newline in a reason, a zero time, or an ID
// that is not 1 to 64 letters, digits, '-' or '_'.
func (e Event) Validate() error {
	if err := coverage.ValidateRecord(e.Destination, e.Range); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	if _, err := ParseState(string(e.State)); err != nil {
		return err
	}
	if err := validID(e.ID); err != nil {
		return err
	}
	if err := validText("reason", e.Reason, MaxReasonLen, true); err != nil {
		return err
	}
	if err := validText("by", e.By, MaxByLen, false); err != nil {
		return err
	}
	if e.At.IsZero() {
		return fmt.Errorf("%w: event %q has no time", ErrInvalidEvent, e.ID)
	}
	return nil
}

func validID(id string) error {
	if id == "" || len(id) > 64 {
		return fmt.Errorf("%w: an event ID is 1 to 64 characters (got %d)", ErrInvalidEvent, len(id))
	}
	for _, c := range id {
		if !(c == '-' || c == '_' || c < utf8.RuneSelf && (unicode.IsLetter(c) || unicode.IsDigit(c))) {
			return fmt.Errorf("%w: event ID %q may hold only ASCII letters, digits, '-' and '_'", ErrInvalidEvent, id)
		}
	}
	return nil
}

func validText(what, s string, limit int, lines bool) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fmt.Errorf("%w: %s is required", ErrInvalidEvent, what)
	case len(s) > limit:
		return fmt.Errorf("%w: %s is %d bytes, longer than %d", ErrInvalidEvent, what, len(s), limit)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalidEvent, what)
	}
	for _, c := range s {
		if unicode.IsControl(c) && !(lines && (c == '\n' || c == '\t')) {
			return fmt.Errorf("%w: %s %q has a control character", ErrInvalidEvent, what, s)
		}
	}
	return nil
}

// Later reports whether e was decided after o: by At, then by ID, so that
// every reader orders the same set the same way.
func (e *Event) Later(o *Event) bool {
	if c := e.At.Compare(o.At); c != 0 {
		return c > 0
	}
	return e.ID > o.ID
}

// First reports whether e is the copy of an ID to keep rather than o, when
// a tier holds two events of one ID that differ (a retry stamped later by
// its recorder, or a writer's mistake): the earlier by At, then by state,
// destination and range, the order the canned SQL reads one row per ID
// in. Every reader keeping First's copy resolves the same set the same way.
func First(e, o *Event) bool {
	if c := e.At.Compare(o.At); c != 0 {
		return c < 0
	}
	if e.State != o.State {
		return e.State < o.State
	}
	if c := e.Destination.Compare(o.Destination); c != 0 {
		return c < 0
	}
	if e.Range.Start != o.Range.Start {
		return e.Range.Start < o.Range.Start
	}
	return e.Range.End < o.Range.End
}
