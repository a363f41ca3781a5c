package replica

import (
	"context"
	"errors"
	"fmt"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/iceberg"
)

// ReplicateStates gives the table's gap states table every event of the
// primary's that it lacks (by ID), in one append, and returns how many:
// the union, as every tier merges states; nothing is removed or replaced.
// Replicate calls it after the coverage. The events land in the gap states
// table only, never in the coverage table, so no reader of the replica can
// take a state for coverage. A primary that keeps no states
// (durable.ErrNoStates) has none to copy.
func ReplicateStates(ctx context.Context, primary durable.Tier, table *iceberg.Table, opts Options) (int, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return 0, err
	}
	src, err := durable.StatesOf(primary)
	if errors.Is(err, durable.ErrNoStates) {
		opts.Logger.Debug("the primary keeps no gap states; none to copy", "primary", primary.Name())
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	// Two replicators copying the same events make duplicate rows, which
	// the table's readers absorb (one per ID).
	have, err := table.States(ctx, durable.Filter{})
	if err != nil {
		return 0, fmt.Errorf("replica: replicate the gap states into %s: %w", table.Name(), err)
	}
	want, err := src.States(ctx, durable.Filter{})
	if err != nil {
		return 0, fmt.Errorf("replica: replicate the gap states from %s: %w", primary.Name(), err)
	}
	held := make(map[string]bool, len(have))
	for _, e := range have {
		held[e.ID] = true
	}
	var missing []gapstate.Event
	for _, e := range want {
		if !held[e.ID] {
			held[e.ID] = true
			missing = append(missing, e)
		}
	}
	if len(missing) == 0 {
		return 0, nil
	}
	if err := table.AppendStatesAs(ctx, opts.Writer, missing); err != nil {
		return 0, fmt.Errorf("replica: replicate %d gap states from %s into %s: %w", len(missing), primary.Name(), table.Name(), err)
	}
	opts.Logger.Info("gap states replicated", "table", table.Name(), "states", len(missing))
	return len(missing), nil
}
