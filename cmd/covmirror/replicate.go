package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/replica"
	"github.com/covmirror/covmirror/tier"
)

// runReplicate copies the primary into its replica, the coverage table
// (`covmirror replicate`; `mirror` is its former name).
func runReplicate(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "replicate", "[--every D] [--json]")
	every := fs.Duration("every", 0, "run until SIGTERM, once per this interval (0: once)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *every < 0 {
		return usageError{Err: errors.New("replicate: --every must not be negative")}
	}
	if g.tier.TableIsPrimary() {
		return usageError{Err: errors.New("replicate: the coverage table is the primary (--durable iceberg): there is nothing to replicate; replicate copies a --durable object or postgres primary into the table")}
	}
	primary, closer, err := tier.Open(ctx, g.tier, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	table, err := tier.OpenTable(ctx, g.tier)
	if err != nil {
		return err
	}
	opts := replica.Options{Writer: g.tier.Writer, Logger: g.logger}
	if *every > 0 {
		return replica.ReplicateEvery(ctx, primary, table, *every, opts) // until SIGTERM
	}
	res, err := replica.Replicate(ctx, primary, table, opts)
	if err != nil && !errors.Is(err, coverage.ErrCorrupt) {
		return err
	}
	// A sink left for a corrupt row fails the run once the others are
	// copied and reported.
	corrupt := err
	if *asJSON {
		return errors.Join(json.NewEncoder(g.stdout).Encode(res), corrupt)
	}
	fmt.Fprintf(g.stdout, "replicated %s into %s: %d sinks, %d replaced, %d unchanged", primary.Name(), table.Name(), res.Sinks, res.Replaced, res.Unchanged)
	if res.States > 0 {
		fmt.Fprintf(g.stdout, ", %d gap states copied", res.States)
	}
	if res.Raced > 0 {
		fmt.Fprintf(g.stdout, ", %d left for the next run (a compaction rewrote them meanwhile)", res.Raced)
	}
	if res.Extra > 0 {
		fmt.Fprintf(g.stdout, "; the table has %d sinks the primary has not, left as they are", res.Extra)
	}
	if res.Corrupt > 0 {
		fmt.Fprintf(g.stdout, "; %d sinks left as they are: their files hold a row that is not a valid row of them (below)", res.Corrupt)
	}
	fmt.Fprintln(g.stdout)
	return corrupt
}
