package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

func runCheckpoint(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "checkpoint", "[--json]")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	m, err := g.openMirror(ctx)
	if err != nil {
		return err
	}
	syncErr := m.Sync(ctx)
	stats := m.Stats()
	closeErr := m.Close()
	if err := errors.Join(syncErr, closeErr); err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(g.stdout).Encode(map[string]any{
			"checkpoints": stats.Checkpoints, "checkpointed_batches": stats.CheckpointedBatches, "pending_batches": stats.PendingBatches,
		})
	}
	if stats.Checkpoints == 0 {
		fmt.Fprintln(g.stdout, "nothing pending: the coverage table is up to date with the local tier")
		return nil
	}
	fmt.Fprintf(g.stdout, "checkpointed %d batches in %d commit(s); %d batches pending\n", stats.CheckpointedBatches, stats.Checkpoints, stats.PendingBatches)
	return nil
}
