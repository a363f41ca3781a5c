package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/covmirror/covmirror/coverage"
)

func runRecord(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "record", "--sink S --topic T --partition P --range START:END")
	// Each flag once: a second --range (or --sink) would otherwise replace
	// the first silently, and record what the caller did not mean.
	sink, topic := &onceFlag{name: "sink"}, &onceFlag{name: "topic"}
	partition, rangeText := &onceFlag{name: "partition", value: "0"}, &onceFlag{name: "range"}
	fs.Var(sink, "sink", "the sink that acknowledged the write (required)")
	fs.Var(topic, "topic", "the topic (required)")
	fs.Var(partition, "partition", "the partition")
	fs.Var(rangeText, "range", "half-open batch range START:END, e.g. 1:6 for batches 1 to 5 (required; once: record another range with another command)")
	if err := parse(fs, args); err != nil {
		return err
	}
	part, err := strconv.ParseInt(partition.value, 10, 32)
	if err != nil {
		return usageError{fmt.Errorf("record: partition %q is not a 32-bit integer", partition.value)}
	}
	d := coverage.Destination{Sink: sink.value, Topic: topic.value, Partition: int32(part)}
	if rangeText.value == "" {
		return usageError{fmt.Errorf("record: --range START:END is required")}
	}
	r, err := coverage.ParseRange(rangeText.value)
	if err != nil {
		return usageError{fmt.Errorf("record: %w", err)}
	}
	if err := coverage.ValidateRecord(d, r); err != nil {
		return usageError{err}
	}
	store, err := g.openLocal()
	if err != nil {
		return err
	}
	// The caller asserts the sink acknowledged r: that is what recording means.
	if err := store.Record(ctx, d, r); err != nil {
		_ = store.Close()
		return err
	}
	if err := store.Close(); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "recorded %s %s\n", d, r)
	return nil
}
