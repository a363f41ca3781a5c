package durable

import (
	"context"
	"errors"
	"fmt"

	"github.com/covmirror/covmirror/gapstate"
)

// StateStore keeps the gap states (package gapstate) of a durable tier:
// refusals, unrecoverable ranges, waivers and reopens, as a set of events
// merged by union over every writer. Every durable tier implements it;
// StatesOf finds it behind a Tier. A state is never coverage: nothing a
// StateStore holds is read by Coverage.
type StateStore interface {
	// AppendStates adds the events, each validated first (a bad one is
	// refused with gapstate.ErrInvalidEvent and nothing is written). It
	// returns nil only once they are durable; an error means they may or
	// may not be. An event whose ID the tier holds already is kept once,
	// so a retry after an unknown outcome is harmless. Two events of one
	// ID that differ (a retry a sidecar stamped with a later time, or a
	// writer's fault) are read as one: the first recorded where the tier
	// knows it (PostgreSQL keeps only that row), else gapstate.First's.
	AppendStates(ctx context.Context, events []gapstate.Event) error

	// States returns every event of the destinations f selects (its
	// Partitions as in Coverage), one per ID, in no particular order. A
	// reader resolving a sink's states needs the reference's events of the
	// same partitions too: it reads without a Sink in f.
	States(ctx context.Context, f Filter) ([]gapstate.Event, error)
}

// ErrNoStates is returned (wrapped) by StatesOf for a tier that keeps no
// gap states.
var ErrNoStates = errors.New("durable: this tier keeps no gap states")

// StatesOf returns t's StateStore, or an error wrapping ErrNoStates.
func StatesOf(t Tier) (StateStore, error) {
	if s, ok := t.(StateStore); ok {
		return s, nil
	}
	return nil, fmt.Errorf("%w: %q cannot record refused, unrecoverable or waived ranges; use a tier that can (object, postgres, iceberg)", ErrNoStates, t.Name())
}

// ValidateStates validates every event, for an AppendStates to call
// before it writes anything.
func ValidateStates(events []gapstate.Event) error {
	for i := range events {
		if err := events[i].Validate(); err != nil {
			return err
		}
	}
	return nil
}
