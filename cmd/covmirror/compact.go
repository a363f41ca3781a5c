package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/tier"
)

func runCompact(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "compact", "[--every D [--jitter F]] [--orphan-older-than D] [--dry-run] [--json]")
	asJSON := fs.Bool("json", false, "print a one-line JSON summary per run")
	every := fs.Duration("every", 0, "run as a scheduled job, once per this interval, until SIGTERM; zero: once")
	jitter := fs.Float64("jitter", 0.1, "spread each scheduled run by up to this fraction of --every")
	expireOlder := fs.Duration("expire-older-than", 0, fmt.Sprintf("expire snapshots older than this (zero: %s)", durable.DefaultExpireOlderThan))
	retain := fs.Int("retain", 0, fmt.Sprintf("always keep this many snapshots (zero: %d)", durable.DefaultRetainLast))
	orphanOlder := fs.Duration("orphan-older-than", 0, fmt.Sprintf("delete unreferenced files older than this (zero: %s; at least %s)", compaction.DefaultOrphanOlderThan, compaction.MinOrphanAge))
	dryRun := fs.Bool("dry-run", false, "compact nothing, expire nothing, only list orphan files")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *every < 0 || *jitter < 0 || *retain < 0 || *expireOlder < 0 {
		return usageError{Err: errors.New("compact: durations, --jitter and --retain must not be negative")}
	}
	maintain := compaction.MaintainOptions{Expire: durable.ExpireOptions{OlderThan: *expireOlder, RetainLast: *retain},
		OrphanOlderThan: *orphanOlder, DryRun: *dryRun}
	maintain.EnsureDefaults()
	if err := maintain.Validate(); err != nil {
		// Negative values were refused above: only the orphan age is left.
		return usageError{Err: fmt.Errorf("compact: --orphan-older-than: %w", err)}
	}
	table, err := tier.OpenTable(ctx, g.tier)
	if err != nil {
		return err
	}
	if *every == 0 {
		if err := compactOnce(ctx, g, table, maintain, *asJSON); err != nil && ctx.Err() == nil {
			return tier.ExplainWriteFailure(ctx, table, err)
		}
		return nil
	}
	return compaction.RunEvery(ctx, *every, *jitter, g.logger, func(ctx context.Context) error { // until SIGTERM
		return compactOnce(ctx, g, table, maintain, *asJSON)
	})
}

// compactRun is one run's summary, one JSON line with --json.
type compactRun struct {
	At          time.Time                 `json:"at"`
	Compaction  compaction.Result         `json:"compaction"`
	Maintenance compaction.MaintainResult `json:"maintenance"`
	Seconds     float64                   `json:"seconds"`
}

func compactOnce(ctx context.Context, g *globals, table *iceberg.Table, maintain compaction.MaintainOptions, asJSON bool) error {
	run := compactRun{At: time.Now().UTC()}
	// A sink left for a corrupt row fails the run, once the other sinks
	// and the maintenance are done and reported.
	var corrupt error
	if !maintain.DryRun {
		opts := compaction.Options{Logger: g.logger}
		if isTerminal(g.stderr) {
			opts.Progress = func(sink string, r compaction.Result) {
				fmt.Fprintf(g.stderr, "\rcompacting: %s done; %d files (%d bytes) read, %d files (%d bytes) written   ",
					sink, r.FilesRead, r.BytesRead, r.FilesWritten, r.BytesWritten)
			}
			defer fmt.Fprintln(g.stderr)
		}
		res, err := compaction.Compact(ctx, table, opts)
		if err != nil && !errors.Is(err, coverage.ErrCorrupt) {
			return err
		}
		run.Compaction, corrupt = res, err
	}
	mres, err := compaction.Maintain(ctx, table, maintain)
	if err != nil {
		return err
	}
	run.Maintenance = mres
	run.Seconds = time.Since(run.At).Seconds()
	if asJSON {
		return errors.Join(json.NewEncoder(g.stdout).Encode(run), corrupt)
	}
	res := run.Compaction
	fmt.Fprintf(g.stdout, "compacted %d sink(s): %d files (%d rows) into %d files (%d rows); %d manifests merged into %d\n",
		res.Sinks, res.FilesRead, res.RowsRead, res.FilesWritten, res.RowsWritten, res.ManifestsMerged, res.ManifestsWritten)
	if res.ManifestMergeError != "" {
		fmt.Fprintf(g.stdout, "manifests not merged (the next compaction tries again): %s\n", res.ManifestMergeError)
	}
	if res.Corrupt > 0 {
		fmt.Fprintf(g.stdout, "%d sink(s) left as they are: their files hold a row that is not a valid row of them (below)\n", res.Corrupt)
	}
	verb := "deleted"
	if mres.DryRun {
		verb = "would delete"
	}
	fmt.Fprintf(g.stdout, "expired %d snapshot(s); %s %d orphan file(s) of %d bytes\n", mres.SnapshotsExpired, verb, mres.OrphanFiles, mres.OrphanBytes)
	return corrupt
}

// isTerminal reports whether w is a character device, where progress lines
// help rather than clutter a log.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}
