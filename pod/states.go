package pod

import (
	"context"
	"fmt"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// RecordStates records gap states (package gapstate) in the pod's durable
// tier, as POST /v1/states does: nil means durable. It never records
// coverage. Each event is validated (gapstate.Event.Validate) before
// anything is written.
func (p *Pod) RecordStates(ctx context.Context, events []gapstate.Event) error {
	store, err := durable.StatesOf(p.tier)
	if err != nil {
		return err
	}
	if err := store.AppendStates(ctx, events); err != nil {
		return fmt.Errorf("pod: recording %d gap states: %w", len(events), err)
	}
	return nil
}
