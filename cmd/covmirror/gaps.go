package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/mirror"
)

// gapRow is one gap in the contract's JSON shape.
type gapRow struct {
	Sink      string `json:"sink"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     uint64 `json:"start"`
	End       uint64 `json:"end"`
}

// taskRows are tasks in the contract's JSON shape.
func taskRows(tasks []mirror.Task) []gapRow {
	rows := make([]gapRow, 0, len(tasks))
	for _, t := range tasks {
		rows = append(rows, gapRow{Sink: t.Destination.Sink, Topic: t.Destination.Topic, Partition: t.Destination.Partition, Start: t.Range.Start, End: t.Range.End})
	}
	return rows
}

// committedGaps is the recovery plan with tasks as large as the gaps: the
// gaps the planner replays and the gaps query prints.
func committedGaps(ctx context.Context, table *iceberg.Table, reference string) ([]gapRow, error) {
	tasks, err := mirror.Plan(ctx, table, mirror.PlanOptions{Reference: reference, MaxBatches: math.MaxUint64})
	if err != nil {
		return nil, err
	}
	return taskRows(tasks), nil
}

func runGaps(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "gaps", "[--reference raw] [--sink S] [--json]")
	reference := fs.String("reference", coverage.RawSink, "the sink gaps are measured against")
	sink := fs.String("sink", "", "only this sink")
	asJSON := fs.Bool("json", false, "print a JSON array of {sink, topic, partition, start, end}")
	if err := parse(fs, args); err != nil {
		return err
	}
	table, err := g.openTable(ctx)
	if err != nil {
		return err
	}
	all, err := committedGaps(ctx, table, *reference)
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
		fmt.Fprintf(g.stdout, "no gaps: every sink covers what %s covers\n", *reference)
	}
	for _, r := range rows {
		fmt.Fprintf(g.stdout, "%s/%s/%d [%d,%d) missing %d batches\n", r.Sink, r.Topic, r.Partition, r.Start, r.End, r.End-r.Start)
	}
	return nil
}
