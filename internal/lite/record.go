package lite

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/version"
	"github.com/covmirror/covmirror/local"
)

// Record runs record: one range a sink has acknowledged, into the local
// tier under localDir.
func Record(ctx context.Context, sh *Shell, localDir string, args []string) error {
	fs := sh.Flags("record", "--sink S --topic T --partition P --range START:END")
	// Each flag once (parse refuses a second value): a second --range or
	// --sink would record what the caller did not mean.
	sink := fs.String("sink", "", "the sink that acknowledged the write (required)")
	topic := fs.String("topic", "", "the topic (required)")
	partition := fs.String("partition", "0", "the partition")
	rangeText := fs.String("range", "", "half-open batch range START:END, e.g. 1:6 for batches 1 to 5 (required; once: record another range with another command)")
	if err := sh.Parse(fs, args); err != nil {
		return err
	}
	part, err := strconv.ParseInt(*partition, 10, 32)
	if err != nil {
		return UsageError{fmt.Errorf("record: partition %q is not a 32-bit integer", *partition)}
	}
	d := coverage.Destination{Sink: *sink, Topic: *topic, Partition: int32(part)}
	if *rangeText == "" {
		return UsageError{fmt.Errorf("record: --range START:END is required")}
	}
	r, err := coverage.ParseRange(*rangeText)
	if err != nil {
		return UsageError{fmt.Errorf("record: %w", err)}
	}
	if err := coverage.ValidateNew(d, r); err != nil {
		return UsageError{err}
	}
	store, err := local.Open(local.Options{Dir: localDir, Logger: sh.Logger})
	if errors.Is(err, local.ErrLocked) {
		return fmt.Errorf("record: nothing was recorded: %w; another record holds it for milliseconds: retry; "+
			"while covmirror serve holds it, record through the pod's API (POST /v1/records) instead", err)
	} else if err != nil {
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
	fmt.Fprintf(sh.Stdout, "recorded %s %s\n", d, r)
	return nil
}

// Version runs version: the version, commit, build date and Go version
// (package version), as text or with --json as one JSON object.
func Version(sh *Shell, args []string) error {
	fs := sh.Flags("version", "")
	asJSON := fs.Bool("json", false, "print the version as one JSON object: program, version, commit, date, go_version")
	if err := sh.Parse(fs, args); err != nil {
		return err
	}
	if *asJSON {
		return version.Get().WriteJSON(sh.Stdout, sh.Prog)
	}
	return version.Get().Write(sh.Stdout, sh.Prog)
}
