package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/tier"
)

func runCheckpoint(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "checkpoint", "[--json]")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	primary, closer, err := tier.Open(ctx, g.tier, true)
	if err != nil {
		return err
	}
	defer closer.Close()
	store, err := g.openLocal()
	if err != nil {
		return err
	}
	m, err := mirror.New(mirror.Options{Local: store, Durable: primary, Writer: g.tier.Writer, Logger: g.logger})
	if err != nil {
		_ = store.Close()
		return err
	}
	// Batch totals are summed here in big integers: ranges reach 2^63, so
	// a few of them overflow the Mirror's uint64 counters.
	before, err := pendingBatches(ctx, store)
	if err != nil {
		_ = store.Close()
		return err
	}
	syncErr := tier.ExplainWriteFailure(ctx, primary, m.Sync(ctx))
	stats := m.Stats()
	after, diagErr := pendingBatches(ctx, store)
	// The store, not the Mirror: Mirror.Close would checkpoint again and,
	// after a failure, fail again with the same error.
	closeErr := store.Close()
	if err := errors.Join(syncErr, diagErr, closeErr); err != nil {
		return err
	}
	checkpointed := new(big.Int).Sub(before, after)
	if *asJSON {
		return json.NewEncoder(g.stdout).Encode(map[string]any{
			"checkpoints": stats.Checkpoints, "checkpointed_batches": checkpointed, "pending_batches": after,
		})
	}
	if stats.Checkpoints == 0 {
		fmt.Fprintln(g.stdout, "nothing pending: the durable tier is up to date with the local tier")
		return nil
	}
	fmt.Fprintf(g.stdout, "checkpointed %s batches in %d commit(s); %s batches pending\n", checkpointed, stats.Checkpoints, after)
	return nil
}

// pendingBatches sums the local tier's pending batches.
func pendingBatches(ctx context.Context, store *local.Store) (*big.Int, error) {
	diag, err := store.Diagnostics(ctx)
	if err != nil {
		return nil, err
	}
	sum := new(big.Int)
	for _, d := range diag.Destinations {
		for _, r := range d.Pending {
			sum.Add(sum, new(big.Int).SetUint64(r.End-r.Start))
		}
	}
	return sum, nil
}

// openLocal opens the local tier under --state.
func (g *globals) openLocal() (*local.Store, error) {
	return local.Open(local.Options{Dir: g.tier.LocalDir(), Logger: g.logger})
}
