package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/lite"
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
// Gaps the tier's gap states hold out of the plan come with their kind
// (refused, unrecoverable; waived with all) and decision.
func committedGaps(ctx context.Context, table durable.Tier, reference string, extents []coverage.Extent, sinks *namedSinks, all bool) ([]gapRow, error) {
	gaps, err := recovery.CommittedGaps(ctx, table, recovery.GapsFilter{Reference: reference, Extents: extents, Sinks: sinks.Sinks, TopicSinks: sinks.TopicSinks, All: all})
	return gaps, explainNoReference("gaps", table, err)
}

// planSinksUse documents --sinks of plan and gaps.
const planSinksUse = "sinks every topic is written to, comma-separated, planned besides the sinks with rows: a topic no sink has rows of (lost on every destination, found from --acked-ends) gets its sinks' replay only if they are named"

// explainNoReference says in the command line's terms that a reference
// has no rows; other errors pass through.
func explainNoReference(command string, table durable.Tier, err error) error {
	var nre *recovery.NoReferenceError
	if errors.As(err, &nre) {
		return fmt.Errorf("%s: reference %q has no rows in %s (%w); it has rows of the sinks %s: pass --reference with the sink raw's coverage is recorded under",
			command, nre.Reference, tier.Describe(table), recovery.ErrNoReference, coverage.Names(nre.Sinks))
	}
	return err
}

func runGaps(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "gaps", "[--reference raw] [--sink S] [--all] [--acked-ends FILE|-] [--sinks a,b] [--topic-sinks T=a,b] [--json] [--exit-code]")
	reference := fs.String("reference", coverage.RawSink, "the sink gaps are measured against; its own holes are rows with this sink")
	sink := fs.String("sink", "", "only this sink")
	all := fs.Bool("all", false, "list waived gaps too (an operator accepted their loss); refused and unrecoverable ones are always listed")
	asJSON := fs.Bool("json", false, "print a JSON array of {sink, topic, partition, start, end, kind}, and decision {event, reason, by, at} for a refused, unrecoverable or waived gap")
	ackedEnds := extentsFlag(fs)
	sinks, exitCode := sinksFlag(fs, planSinksUse), lite.ExitCodeFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	extents, err := g.readExtents("gaps", *ackedEnds)
	if err != nil {
		return err
	}
	primary, closer, err := openTier(ctx, g.tier, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	found, err := committedGaps(ctx, primary, *reference, extents, sinks, *all)
	if err != nil {
		return err
	}
	rows := []gapRow{}
	for _, r := range found {
		if *sink == "" || r.Sink == *sink {
			rows = append(rows, r)
		}
	}
	if *asJSON {
		return lite.GapsFound(*exitCode, len(rows), json.NewEncoder(g.stdout).Encode(rows))
	}
	if len(rows) == 0 {
		fmt.Fprintf(g.stdout, "no gaps: every sink covers what %s covers, and %s's coverage has no holes\n", *reference, *reference)
	}
	for _, r := range rows {
		d := coverage.Destination{Sink: r.Sink, Topic: r.Topic, Partition: r.Partition}
		switch {
		case r.Kind == recovery.KindVerifyReference:
			fmt.Fprintf(g.stdout, "%s [%d,%d) hole in the reference itself: %d batches to verify in %q\n", d, r.Start, r.End, r.End-r.Start, r.Sink)
		case r.Kind.Held():
			fmt.Fprintf(g.stdout, "%s [%d,%d) missing %d batches, %s: %s\n", d, r.Start, r.End, r.End-r.Start, r.Kind, r.Decision)
		default:
			fmt.Fprintf(g.stdout, "%s [%d,%d) missing %d batches\n", d, r.Start, r.End, r.End-r.Start)
		}
	}
	return lite.GapsFound(*exitCode, len(rows), nil)
}
