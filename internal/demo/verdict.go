package demo

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/replica"
	"github.com/covmirror/covmirror/tier"
)

// replicated reports whether the coverage table is the replica of another
// primary.
func (d *run) replicated() bool { return durable.Tier(d.table) != d.primary }

// checkClaims fails if the committed coverage claims a batch a store does
// not hold: coverage leading the sink, the loss docs/design.md forbids. The
// table is checked too when it mirrors the sink objects: a mirror may lag
// them, never lead.
func (d *run) checkClaims(ctx context.Context) error {
	tiers := []durable.Tier{d.primary}
	if d.replicated() {
		tiers = append(tiers, d.table)
	}
	for _, t := range tiers {
		committed, err := t.Coverage(ctx, durable.Filter{Topic: d.p.Topic})
		if err != nil {
			return err
		}
		if err := d.p.CheckClaims(tier.Describe(t), committed); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	return nil
}

// replicate copies the primary into its replica, the coverage table, as
// `covmirror replicate` does.
func (d *run) replicate(ctx context.Context) error {
	// Its per-sink lines would interleave with the story: only at debug.
	logger := slog.New(slog.DiscardHandler)
	if d.opts.Logger.Enabled(ctx, slog.LevelDebug) {
		logger = d.opts.Logger
	}
	res, err := replica.Replicate(ctx, d.primary, d.table, replica.Options{Writer: "demo-mirror", Logger: logger})
	if err != nil {
		return err
	}
	d.say("   mirror: %d sinks copied into the coverage table, %d unchanged", res.Replaced, res.Unchanged)
	return d.checkClaims(ctx)
}

// sameCoverage fails unless the table holds exactly the primary's
// coverage of the topic: after a mirror with no writer running, it must.
func (d *run) sameCoverage(ctx context.Context) error {
	want, err := d.primary.Coverage(ctx, durable.Filter{Topic: d.p.Topic})
	if err != nil {
		return err
	}
	got, err := d.table.Coverage(ctx, durable.Filter{Topic: d.p.Topic})
	if err != nil {
		return err
	}
	equal := maps.EqualFunc(want, got, func(a, b *coverage.RangeSet) bool { return slices.Equal(a.Ranges(), b.Ranges()) })
	if !equal {
		return fmt.Errorf("demo: VERDICT FAILED: after the last mirror the coverage table holds %v, %s %v", got, d.primaryName, want)
	}
	return nil
}

// verdict checks the run against the simulated stores' own contents.
func (d *run) verdict(ctx context.Context, batches uint64) error {
	if err := d.checkClaims(ctx); err != nil {
		return err
	}
	committed, err := d.primary.Coverage(ctx, durable.Filter{Topic: d.p.Topic})
	if err != nil {
		return err
	}
	if problems := d.p.Incomplete(committed, batches); len(problems) > 0 {
		return errors.New("demo: VERDICT FAILED:\n  " + strings.Join(problems, "\n  "))
	}
	if d.replicated() {
		if err := d.sameCoverage(ctx); err != nil {
			return err
		}
	}
	d.say("\nVerdict, checked against the simulated stores' own contents:")
	d.say("  - every one of the %d batches of %d partitions in raw reached lake, warehouse and search;", batches, d.p.Partitions)
	d.say("  - no committed coverage ever claimed a batch its sink did not hold (checked after every checkpoint);")
	if d.replicated() {
		d.say("  - the coverage table, replicated from %s, never claimed more than they held, and after the last\n    replication holds exactly their coverage;", d.primaryName)
	}
	d.say("  - the price of lagging: %d repeated batch-writes, absorbed by the sinks' dedup.", d.p.Dups())
	d.next()
	return nil
}
