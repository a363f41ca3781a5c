package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/tier"
)

// openTier opens the durable tier the commands read and write (tier.Open);
// a variable so that the tests can give a tier the gap states it lacks.
var openTier = tier.Open

// stateCommand is the run function of the command name, which records st.
func stateCommand(name string, st gapstate.State) command {
	return command{gapstate.Meaning[st], func(ctx context.Context, g *globals, args []string) error {
		return runState(ctx, g, name, st, args)
	}}
}

// runState records one gapstate.Event of state st into the durable tier's
// StateStore: a decision, never coverage.
func runState(ctx context.Context, g *globals, name string, st gapstate.State, args []string) error {
	fs := subFlags(g, name, "--sink S --topic T --partition P (--range A-B | --start A --end B) --reason TEXT [--by NAME] [--json]")
	sinkUse := "the sink the decision is about (required)"
	defaultSink := ""
	if st == gapstate.Unrecoverable {
		// Raw's retention job declares what raw expired: an event of raw
		// itself applies to every sink of the partition.
		defaultSink = coverage.RawSink
		sinkUse = "the sink the decision is about; the default, raw's, declares raw lost the range (as raw's retention job does), for every sink of the partition"
	}
	sink := fs.String("sink", defaultSink, sinkUse)
	topic := fs.String("topic", "", "the topic (required)")
	var partition partitionFlag
	fs.Var(&partition, "partition", "the partition, 0 to 2147483647 (required)")
	rangeText := fs.String("range", "", "the half-open batch range A-B (or A:B), e.g. 3-5 for batches 3 and 4")
	start := fs.String("start", "", "the range's first batch, with --end instead of --range")
	end := fs.String("end", "", "the batch after the range's last, with --start")
	reason := fs.String("reason", "", "why, in words an operator will read later (required)")
	by := fs.String("by", gapstate.DefaultBy(), "who decides")
	asJSON := fs.Bool("json", false, "print the recorded event as one JSON object {id, sink, topic, partition, start, end, state, reason, by, at}")
	if err := parse(fs, args); err != nil {
		return err
	}
	e, err := stateEvent(name, st, fs, *sink, *topic, partition.P, *rangeText, *start, *end, *reason, *by)
	if err != nil {
		return err
	}
	primary, closer, err := openTier(ctx, g.tier, true)
	if err != nil {
		return err
	}
	defer closer.Close()
	store, err := durable.StatesOf(primary)
	if err != nil {
		return fmt.Errorf("%s: nothing was recorded: %w", name, err)
	}
	// Stamped after what it overrides: a clock behind the pod's that
	// refused must not make a reopen do nothing.
	if e, err = durable.Decide(ctx, store, coverage.RawSink, e); err != nil {
		// The outcome is unknown: the same event (same ID) again is harmless.
		return fmt.Errorf("%s: event %q may or may not be recorded in %s: %w; run the command again to be sure (a repeat is a second decision, read as the latest)", name, e.ID, tier.Describe(primary), err)
	}
	if *asJSON {
		return json.NewEncoder(g.stdout).Encode(e)
	}
	fmt.Fprintf(g.stdout, "%s %s %s: reason %q by %q at %s (event %q)\n", e.State, e.Destination, e.Range, e.Reason, e.By, e.At.Format(time.RFC3339Nano), e.ID)
	return nil
}

// stateEvent builds and validates the event the command line describes; a
// mistake is a usage error.
func stateEvent(name string, st gapstate.State, fs *flag.FlagSet, sink, topic string, partition *int32, rangeText, start, end, reason, by string) (gapstate.Event, error) {
	usage := func(format string, a ...any) error {
		return usageError{Err: fmt.Errorf(name+": "+format, a...)}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case sink == "":
		return gapstate.Event{}, usage("--sink is required")
	case topic == "":
		return gapstate.Event{}, usage("--topic is required")
	case partition == nil:
		return gapstate.Event{}, usage("--partition is required")
	case strings.TrimSpace(reason) == "":
		return gapstate.Event{}, usage("--reason is required: say why, for whoever reads this decision later")
	}
	var r coverage.Range
	var err error
	switch {
	case set["range"] && (set["start"] || set["end"]):
		return gapstate.Event{}, usage("give the range as --range A-B or as --start A --end B, not both")
	case set["range"]:
		r, err = coverage.ParseRange(rangeText)
	case set["start"] && set["end"]:
		r, err = coverage.ParseRange(start + ":" + end)
	default:
		return gapstate.Event{}, usage("the range is required: --range A-B, or --start A --end B")
	}
	if err != nil {
		return gapstate.Event{}, usage("%w", err)
	}
	e, err := gapstate.NewDecision(coverage.Destination{Sink: sink, Topic: topic, Partition: *partition}, r, st, reason, by, time.Now())
	if err != nil {
		return gapstate.Event{}, usage("%w", err)
	}
	return e, nil
}
