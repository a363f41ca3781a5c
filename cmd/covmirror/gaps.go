package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
)

// gapRow is one gap in the contract's JSON shape.
type gapRow struct {
	Sink      string `json:"sink"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     uint64 `json:"start"`
	End       uint64 `json:"end"`
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
	all, err := table.Coverage(ctx, iceberg.Filter{})
	if err != nil {
		return err
	}
	rows := []gapRow{}
	for _, d := range slices.SortedFunc(maps.Keys(all), coverage.Destination.Compare) {
		if d.Sink == *reference || (*sink != "" && d.Sink != *sink) {
			continue
		}
		ref := all[d.WithSink(*reference)]
		if ref == nil {
			ref = new(coverage.RangeSet)
		}
		gaps := coverage.Gaps(ref, all[d])
		for r := range gaps.All() {
			rows = append(rows, gapRow{Sink: d.Sink, Topic: d.Topic, Partition: d.Partition, Start: r.Start, End: r.End})
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
