package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/mirror"
)

// runDemo walks the design's example through every part: batches 1..100
// land in raw, the lake sink fails 30..40 and 70, and recovery closes the
// gaps from committed coverage only.
func runDemo(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "demo", "")
	topic := fs.String("topic", "demo", "the topic the demo writes")
	if err := parse(fs, args); err != nil {
		return err
	}
	say := func(format string, a ...any) { fmt.Fprintf(g.stdout, format+"\n", a...) }
	m, err := g.openMirror(ctx)
	if err != nil {
		return err
	}
	defer m.Close()
	table, err := g.openTable(ctx)
	if err != nil {
		return err
	}
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: *topic}
	lake := raw.WithSink("lake")

	say("1. Batches 1..100 of %s/%d are durable in raw; the source is acknowledged.", raw.Topic, raw.Partition)
	if err := m.Record(ctx, raw, coverage.Range{Start: 1, End: 101}); err != nil {
		return err
	}
	say("2. The lake sink writes them; batches 30..40 and 70 fail and are not recorded.")
	sinkDown := errors.New("lake unavailable")
	failed := 0
	for b := uint64(1); b <= 100; b++ {
		err := coverage.WriteThenRecord(ctx, m, lake, coverage.Range{Start: b, End: b + 1}, func(context.Context) error {
			if (b >= 30 && b <= 40) || b == 70 {
				return sinkDown
			}
			return nil
		})
		if errors.Is(err, sinkDown) {
			failed++
		} else if err != nil {
			return err
		}
	}
	local, _ := m.Covered(ctx, lake)
	say("   local tier: lake covers %s (%d writes failed)", local.String(), failed)

	say("3. Checkpoint into the coverage table %s.", table.Name())
	if err := m.Sync(ctx); err != nil {
		return err
	}
	say("4. Recovery plans from the table only:")
	tasks, err := mirror.Plan(ctx, table, mirror.PlanOptions{Reference: coverage.RawSink})
	if err != nil {
		return err
	}
	for _, t := range tasks {
		if t.Destination.Topic == *topic {
			say("   replay %s %s", t.Destination, t.Range)
		}
	}
	say("5. The lake is back: replay each task, recording it after the ack, and checkpoint.")
	done, err := mirror.Recover(ctx, tasks, mirror.ReplayFunc(func(context.Context, mirror.Task) error { return nil }), m)
	if err != nil {
		return err
	}
	if err := m.Sync(ctx); err != nil {
		return err
	}
	after, err := mirror.Plan(ctx, table, mirror.PlanOptions{})
	if err != nil {
		return err
	}
	say("   %d task(s) replayed; tasks left: %d", done, len(after))

	say("6. Compact the table's small files (set-equal before and after):")
	res, err := compaction.Compact(ctx, table, compaction.Options{})
	if err != nil {
		return err
	}
	say("   %d files into %d", res.FilesRead, res.FilesWritten)
	all, err := table.Coverage(ctx, iceberg.Filter{Topic: *topic})
	if err != nil {
		return err
	}
	say("   committed: raw %s, lake %s", all[raw], all[lake])
	say("\nNext: covmirror inspect, covmirror gaps --json, covmirror plan --json (state in %s).", g.state)
	return nil
}
