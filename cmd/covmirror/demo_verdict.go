package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/covmirror/covmirror/iceberg"
)

// checkClaims fails if the committed coverage claims a batch a store does
// not hold: coverage leading the sink, the loss the design forbids.
func (d *demoRun) checkClaims(ctx context.Context) error {
	committed, err := d.table.Coverage(ctx, iceberg.Filter{Topic: d.p.Topic})
	if err != nil {
		return err
	}
	if err := d.p.CheckClaims("the coverage table", committed); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

// verdict checks the run against the simulated stores' own contents.
func (d *demoRun) verdict(ctx context.Context, batches uint64) error {
	if err := d.checkClaims(ctx); err != nil {
		return err
	}
	committed, err := d.table.Coverage(ctx, iceberg.Filter{Topic: d.p.Topic})
	if err != nil {
		return err
	}
	if problems := d.p.Incomplete(committed, batches); len(problems) > 0 {
		return errors.New("demo: VERDICT FAILED:\n  " + strings.Join(problems, "\n  "))
	}
	d.say("\nVerdict, checked against the simulated stores' own contents:")
	d.say("  - every one of the %d batches of %d partitions in raw reached lake, warehouse and search;", batches, d.p.Partitions)
	d.say("  - no committed coverage ever claimed a batch its sink did not hold (checked after every checkpoint);")
	d.say("  - the price of lagging: %d repeated batch-writes, absorbed by the sinks' dedup.", d.p.Dups())
	flags := "--state " + d.dir
	if d.namespace != "" {
		flags += " --namespace " + d.namespace + " (and the same --catalog-prop settings)"
	}
	d.say("\nNext: covmirror %s gaps --json | query summary | plan --json", flags)
	return nil
}
