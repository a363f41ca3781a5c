package main

import (
	"context"
	"fmt"

	"github.com/covmirror/covmirror/coverage"
)

func runRecord(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "record", "--sink S --topic T --partition P --range START:END")
	var d coverage.Destination
	var rangeText string
	fs.StringVar(&d.Sink, "sink", "", "the sink that acknowledged the write (required)")
	fs.StringVar(&d.Topic, "topic", "", "the topic (required)")
	partition := fs.Int("partition", 0, "the partition")
	fs.StringVar(&rangeText, "range", "", "half-open batch range START:END, e.g. 1:6 for batches 1 to 5 (required)")
	if err := parse(fs, args); err != nil {
		return err
	}
	d.Partition = int32(*partition)
	if int(d.Partition) != *partition {
		return usageError{fmt.Errorf("record: partition %d does not fit 32 bits", *partition)}
	}
	if rangeText == "" {
		return usageError{fmt.Errorf("record: --range START:END is required")}
	}
	r, err := coverage.ParseRange(rangeText)
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
