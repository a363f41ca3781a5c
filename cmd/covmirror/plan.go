package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/recovery"
)

func runPlan(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "plan", "[--reference raw] [--max-batches N] [--max-tasks N] [--acked-ends FILE|-] [--sinks a,b] [--topic-sinks T=a,b] [--json] [--exit-code]")
	reference := fs.String("reference", coverage.RawSink, "the sink replay reads from")
	maxBatches := fs.Uint64("max-batches", recovery.DefaultMaxBatches, "largest task")
	maxTasks := fs.Int("max-tasks", recovery.DefaultMaxTasks, "most tasks printed: a larger plan prints its first ones and says so on stderr (recover them, then plan again)")
	asJSON := fs.Bool("json", false, "print a JSON array of tasks {sink, topic, partition, start, end, kind}; gaps held out of the plan (refused, unrecoverable, waived) are never in it: covmirror gaps --json lists them")
	ackedEnds := extentsFlag(fs)
	sinks, exitCode := sinksFlag(fs, planSinksUse), lite.ExitCodeFlag(fs)
	if err := parse(fs, args); err != nil {
		return err
	}
	extents, err := g.readExtents("plan", *ackedEnds)
	if err != nil {
		return err
	}
	if *maxBatches == 0 {
		return usageError{Err: fmt.Errorf("plan: --max-batches must be positive")}
	}
	if *maxTasks <= 0 {
		return usageError{Err: fmt.Errorf("plan: --max-tasks must be positive")}
	}
	primary, closer, err := openTier(ctx, g.tier, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	tasks, held, err := recovery.PlanHeld(ctx, primary, recovery.PlanOptions{Reference: *reference, MaxBatches: *maxBatches, MaxTasks: *maxTasks, Extents: extents, Sinks: sinks.Sinks, TopicSinks: sinks.TopicSinks})
	err = explainNoReference("plan", primary, err)
	if errors.Is(err, recovery.ErrPlanTruncated) {
		// Not a failure: these tasks, taken in turn from every destination
		// with work, are what to do first.
		defer fmt.Fprintf(g.stderr, "note: %v (--max-tasks raises the limit)\n", err)
	} else if err != nil {
		return err
	}
	rows := recovery.GapsOf(tasks, recovery.GapsFilter{})
	// What gaps exits 3 for: the tasks, and the gaps held out of them but
	// the waived, whose loss an operator accepted.
	found := len(rows) + len(held) - recovery.CountKind(held, recovery.KindWaived)
	if *asJSON {
		// The array stays the tasks alone, as consumers replay it; the held
		// gaps are said on stderr.
		if n := recovery.CountKind(held, recovery.KindUnrecoverable); n > 0 {
			defer fmt.Fprintf(g.stderr, "note: %d unrecoverable gaps are held out of the plan: raw no longer holds them (covmirror gaps --json lists them)\n", n)
		}
		return lite.GapsFound(*exitCode, found, json.NewEncoder(g.stdout).Encode(rows))
	}
	if len(rows) == 0 {
		fmt.Fprintln(g.stdout, "nothing to replay or verify")
	}
	for i, r := range rows {
		// Destination's form quotes a topic a terminal would act on.
		d := coverage.Destination{Sink: r.Sink, Topic: r.Topic, Partition: r.Partition}
		switch r.Kind {
		case recovery.KindVerifyReference:
			fmt.Fprintf(g.stdout, "task %d: verify-reference %s [%d,%d): read back what %s holds and record only that; the sinks' gaps there follow on the next plan\n", i+1, d, r.Start, r.End, r.Sink)
		default:
			fmt.Fprintf(g.stdout, "task %d: %s %s [%d,%d) from %s\n", i+1, r.Kind, d, r.Start, r.End, *reference)
		}
	}
	recovery.WriteHeld(g.stdout, held)
	return lite.GapsFound(*exitCode, found, nil)
}
