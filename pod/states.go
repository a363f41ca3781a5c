package pod

import (
	"context"
	"fmt"

	"github.com/covmirror/covmirror/gapstate"
)

// RecordStates records gap states (package gapstate) as POST /v1/states
// does: into the local tier, synced, and on to the durable tier at once
// when it answers, else by the next checkpoint (mirror.Mirror.RecordStates):
// nil means durable on the pod's disk, so a durable tier that is down does
// not lose a refusal. It never records coverage. Each event is validated
// (gapstate.Event.Validate) before anything is written; a durable tier that
// keeps no states fails it with durable.ErrNoStates.
func (p *Pod) RecordStates(ctx context.Context, events []gapstate.Event) error {
	if err := p.mirror.RecordStates(ctx, events); err != nil {
		return fmt.Errorf("pod: %w", err)
	}
	return nil
}
