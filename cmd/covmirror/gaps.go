package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/recovery"
	"github.com/covmirror/covmirror/tier"
)

// gapRow is one gap or plan task in the contract's JSON shape, {sink,
// topic, partition, start, end, kind} (the sidecar's GET /v1/gaps and
// /v1/plan give the same): kind is replay, or verify-reference for a hole
// in the reference's own coverage.
type gapRow = recovery.Gap

// committedGaps are the committed gaps (recovery.CommittedGaps): the
// reference's holes (kind verify-reference), looked for over the source
// extents too, and every other sink's gaps against the reference, ordered
// by sink, topic, partition and start.
func committedGaps(ctx context.Context, table durable.Tier, reference string, extents []coverage.Extent, sinks []string) ([]gapRow, error) {
	gaps, err := recovery.CommittedGaps(ctx, table, recovery.GapsFilter{Reference: reference, Extents: extents, Sinks: sinks})
	return gaps, explainNoReference("gaps", table, err)
}

// planSinksUse documents --sinks of plan and gaps.
const planSinksUse = "sinks every topic is written to, comma-separated, planned besides the sinks with rows: a topic no sink has rows of (lost on every destination, found from --acked-ends) gets its sinks' replay only if they are named"

// planCommand is recovery.Plan with a reference that has no rows reported in
// the command line's terms.
func planCommand(ctx context.Context, command string, table durable.Tier, opts recovery.PlanOptions) ([]recovery.Task, error) {
	tasks, err := recovery.Plan(ctx, table, opts)
	return tasks, explainNoReference(command, table, err)
}

// explainNoReference says in the command line's terms that a reference
// has no rows; other errors pass through.
func explainNoReference(command string, table durable.Tier, err error) error {
	var nre *recovery.NoReferenceError
	if errors.As(err, &nre) {
		return fmt.Errorf("%s: reference %q has no rows in %s (%w); it has rows of the sinks %s: pass --reference with the sink raw's coverage is recorded under",
			command, nre.Reference, tier.Describe(table), recovery.ErrNoReference, strings.Join(nre.Sinks, ", "))
	}
	return err
}

func runGaps(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "gaps", "[--reference raw] [--sink S] [--acked-ends FILE|-] [--sinks a,b] [--json]")
	reference := fs.String("reference", coverage.RawSink, "the sink gaps are measured against; its own holes are rows with this sink")
	sink := fs.String("sink", "", "only this sink")
	asJSON := fs.Bool("json", false, "print a JSON array of {sink, topic, partition, start, end, kind}")
	ackedEnds := extentsFlag(fs)
	sinks := sinksFlag(fs, planSinksUse)
	if err := parse(fs, args); err != nil {
		return err
	}
	extents, err := g.readExtents("gaps", *ackedEnds)
	if err != nil {
		return err
	}
	primary, closer, err := tier.Open(ctx, g.tier, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	all, err := committedGaps(ctx, primary, *reference, extents, *sinks)
	if err != nil {
		return err
	}
	rows := []gapRow{}
	for _, r := range all {
		if *sink == "" || r.Sink == *sink {
			rows = append(rows, r)
		}
	}
	if *asJSON {
		return json.NewEncoder(g.stdout).Encode(rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(g.stdout, "no gaps: every sink covers what %s covers, and %s's coverage has no holes\n", *reference, *reference)
	}
	for _, r := range rows {
		// Destination's form quotes a topic holding a line break or a
		// character a terminal acts on (a topic may hold any but NUL).
		d := coverage.Destination{Sink: r.Sink, Topic: r.Topic, Partition: r.Partition}
		if r.Kind == recovery.KindVerifyReference {
			fmt.Fprintf(g.stdout, "%s [%d,%d) hole in the reference itself: %d batches to verify in %s\n", d, r.Start, r.End, r.End-r.Start, r.Sink)
			continue
		}
		fmt.Fprintf(g.stdout, "%s [%d,%d) missing %d batches\n", d, r.Start, r.End, r.End-r.Start)
	}
	return nil
}
