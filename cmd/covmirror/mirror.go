package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/replica"
)

func runMirror(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "mirror", "[--every D] [--json]")
	every := fs.Duration("every", 0, "run until SIGTERM, once per this interval (0: once)")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *every < 0 {
		return usageError{errors.New("mirror: --every must not be negative")}
	}
	if g.primaryIsTable() {
		return usageError{errors.New("mirror: the coverage table is the primary (--durable iceberg): there is nothing to mirror; mirror copies a --durable object or postgres primary into the table")}
	}
	tier, closer, err := g.openPrimary(ctx, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	table, err := g.openTable(ctx)
	if err != nil {
		return err
	}
	if *every > 0 {
		return replica.ReplicateEvery(ctx, tier, table, *every, replica.Options{Writer: g.writer, Logger: g.logger}) // until SIGTERM
	}
	res, err := replica.Replicate(ctx, tier, table, replica.Options{Writer: g.writer, Logger: g.logger})
	if err != nil && !errors.Is(err, coverage.ErrCorrupt) {
		return err
	}
	// A sink left for a corrupt row fails the run once the others are
	// mirrored and reported.
	corrupt := err
	if *asJSON {
		return errors.Join(json.NewEncoder(g.stdout).Encode(res), corrupt)
	}
	fmt.Fprintf(g.stdout, "mirrored %s into %s: %d sinks, %d replaced, %d unchanged", tier.Name(), table.Name(), res.Sinks, res.Replaced, res.Unchanged)
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
