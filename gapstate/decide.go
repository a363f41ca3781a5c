package gapstate

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// Meaning says in a line what recording each state means, for the commands'
// help.
var Meaning = map[State]string{
	Refused:       "record that a sink refuses a range for ever: out of the replay plan, listed by gaps, until reopened or covered",
	Unrecoverable: "record that raw no longer holds a range (a replay cannot find it; raw's retention expired it): out of the plan, listed apart",
	Reopened:      "return a refused, unrecoverable or waived range to the replay plan (after fixing the sink, the data or raw)",
	Waived:        "accept the loss of a range for a sink, with a reason: no longer alerted, never coverage, listed by gaps --all and query waivers",
}

// NewDecision is a fresh event of state st about r of d, decided by by now
// (to the microsecond, what every tier keeps), validated.
func NewDecision(d coverage.Destination, r coverage.Range, st State, reason, by string, now time.Time) (Event, error) {
	e := Event{ID: NewID(), Destination: d, Range: r, State: st, Reason: reason, By: by, At: now.UTC().Truncate(time.Microsecond)}
	if strings.TrimSpace(reason) == "" {
		return Event{}, fmt.Errorf("%w: a reason is required: say why, for whoever reads this decision later", ErrInvalidEvent)
	}
	if err := e.Validate(); err != nil {
		return Event{}, err
	}
	// A new decision names its destination as every write surface must
	// (coverage.ValidName); Validate, which reading applies, is weaker.
	if err := coverage.ValidateNew(d, r); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrInvalidEvent, err)
	}
	return e, nil
}

// DefaultBy is $USER@hostname: who decides, when a command is not told.
func DefaultBy() string {
	user := os.Getenv("USER")
	if user == "" {
		user = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	return user + "@" + host
}
