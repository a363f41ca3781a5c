package main

import (
	"context"
	"fmt"

	"github.com/covmirror/covmirror/internal/demo"
	"github.com/covmirror/covmirror/tier"
)

// runDemo parses the demo's flags and runs it (package internal/demo).
func runDemo(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "demo", "[--seed N] [--batches N] [--durable iceberg|object]")
	seed := fs.Uint64("seed", 1, "seed of the simulation: the same seed replays the same run")
	batches := fs.Int("batches", demo.DefaultBatches, "batches per partition the source produces")
	kind := fs.String("durable", g.tier.Kind, "the durable tier, as the global --durable: iceberg, object (sink objects in a directory under the run's state, replicated into the coverage table) or postgres (a fresh schema of its own in --postgres-url, replicated likewise)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *batches < demo.MinBatches {
		return usageError{Err: fmt.Errorf("demo: --batches must be at least %d", demo.MinBatches)}
	}
	if err := tier.ParseKind(*kind); err != nil {
		return usageError{Err: fmt.Errorf("demo: %w", err)}
	}
	ts := g.tier
	ts.Kind = *kind
	return demo.Run(ctx, demo.Options{Seed: *seed, Batches: *batches, Tier: ts, Out: g.stdout, Logger: g.logger, ShowGaps: showGaps})
}
