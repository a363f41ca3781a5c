package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/local"
)

// openLocal opens the local tier under --state.
func (g *globals) openLocal() (*local.Store, error) {
	return local.Open(local.Options{Dir: g.tier.LocalDir(), Logger: g.logger})
}

func runRecord(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "record", "--sink S --topic T --partition P --range START:END")
	// Each flag once (parse refuses a second value): a second --range or
	// --sink would record what the caller did not mean.
	sink := fs.String("sink", "", "the sink that acknowledged the write (required)")
	topic := fs.String("topic", "", "the topic (required)")
	partition := fs.String("partition", "0", "the partition")
	rangeText := fs.String("range", "", "half-open batch range START:END, e.g. 1:6 for batches 1 to 5 (required; once: record another range with another command)")
	if err := parse(fs, args); err != nil {
		return err
	}
	part, err := strconv.ParseInt(*partition, 10, 32)
	if err != nil {
		return usageError{fmt.Errorf("record: partition %q is not a 32-bit integer", *partition)}
	}
	d := coverage.Destination{Sink: *sink, Topic: *topic, Partition: int32(part)}
	if *rangeText == "" {
		return usageError{fmt.Errorf("record: --range START:END is required")}
	}
	r, err := coverage.ParseRange(*rangeText)
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
