package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/mirror"
)

// gapRow is one gap in the contract's JSON shape (the sidecar's GET /v1/gaps
// gives the same). A row whose sink is the reference is a hole in the
// reference's own coverage.
type gapRow = mirror.Gap

// taskRow is a plan task: a gap row and what recovering it means.
type taskRow struct {
	gapRow
	Kind mirror.TaskKind `json:"kind"`
}

// taskRows are tasks in the contract's JSON shape.
func taskRows(tasks []mirror.Task) []taskRow {
	rows := make([]taskRow, 0, len(tasks))
	for _, t := range tasks {
		rows = append(rows, taskRow{gapRow{Sink: t.Destination.Sink, Topic: t.Destination.Topic, Partition: t.Destination.Partition, Start: t.Range.Start, End: t.Range.End}, t.Kind})
	}
	return rows
}

// committedGaps are the committed gaps (mirror.CommittedGaps): the
// reference's interior holes (rows with sink = reference) and every other
// sink's gaps against the reference, ordered by sink, topic, partition and
// start.
func committedGaps(ctx context.Context, table durable.Tier, reference string) ([]gapRow, error) {
	gaps, err := mirror.CommittedGaps(ctx, table, mirror.GapsFilter{Reference: reference})
	return gaps, explainNoReference("gaps", table, err)
}

// planCommand is mirror.Plan with a reference that has no rows reported in
// the command line's terms.
func planCommand(ctx context.Context, command string, table durable.Tier, opts mirror.PlanOptions) ([]mirror.Task, error) {
	tasks, err := mirror.Plan(ctx, table, opts)
	return tasks, explainNoReference(command, table, err)
}

// explainNoReference says in the command line's terms that a reference
// has no rows; other errors pass through.
func explainNoReference(command string, table durable.Tier, err error) error {
	var nre *mirror.NoReferenceError
	if errors.As(err, &nre) {
		return fmt.Errorf("%s: reference %q has no rows in %s (%w); it has rows of the sinks %s: pass --reference with the sink raw's coverage is recorded under",
			command, nre.Reference, describeTier(table), mirror.ErrNoReference, strings.Join(nre.Sinks, ", "))
	}
	return err
}

func runGaps(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "gaps", "[--reference raw] [--sink S] [--json]")
	reference := fs.String("reference", coverage.RawSink, "the sink gaps are measured against; its own holes are rows with this sink")
	sink := fs.String("sink", "", "only this sink")
	asJSON := fs.Bool("json", false, "print a JSON array of {sink, topic, partition, start, end}")
	if err := parse(fs, args); err != nil {
		return err
	}
	tier, closer, err := g.openPrimary(ctx, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	all, err := committedGaps(ctx, tier, *reference)
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
		if r.Sink == *reference {
			fmt.Fprintf(g.stdout, "%s/%s/%d [%d,%d) hole in the reference itself: %d batches to verify in %s\n", r.Sink, r.Topic, r.Partition, r.Start, r.End, r.End-r.Start, r.Sink)
			continue
		}
		fmt.Fprintf(g.stdout, "%s/%s/%d [%d,%d) missing %d batches\n", r.Sink, r.Topic, r.Partition, r.Start, r.End, r.End-r.Start)
	}
	return nil
}
