package compaction

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
)

// ErrNotSetEqual: the rows a compaction would write do not cover exactly
// what its inputs covered. Nothing was committed.
var ErrNotSetEqual = errors.New("compaction would change the covered set")

// Options configures Compact. Zero values are documented defaults.
type Options struct {
	// SmallFileSize: data files under this many bytes are small. Zero
	// value: DefaultSmallFileSize.
	SmallFileSize int64
	// MinSmallFiles: a sink's partition is rewritten when it has at least
	// this many small files. Zero value: DefaultMinSmallFiles.
	MinSmallFiles int
	// SkipVerify skips the set-equality check before each commit. The zero
	// value verifies, which costs one pass over the merged ranges.
	SkipVerify bool
	// Job names the compaction in snapshot summaries. Zero value:
	// DefaultJob.
	Job string
	// Logger receives per-partition progress. Zero value: discard.
	Logger *slog.Logger
	// Progress, when set, is called after each sink is rewritten with that
	// sink's name and the run's totals so far, for a terminal to show.
	// Zero value: none.
	Progress func(sink string, soFar Result)
}

// Options' defaults.
const (
	DefaultSmallFileSize = 32 << 20
	DefaultMinSmallFiles = 2
	DefaultJob           = "covmirror-compaction"
)

// EnsureDefaults fills in zero values.
func (o *Options) EnsureDefaults() {
	if o.SmallFileSize == 0 {
		o.SmallFileSize = DefaultSmallFileSize
	}
	if o.MinSmallFiles == 0 {
		o.MinSmallFiles = DefaultMinSmallFiles
	}
	if o.Job == "" {
		o.Job = DefaultJob
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports unusable options. A negative SmallFileSize would make
// no file small, so nothing would ever be compacted; a negative
// MinSmallFiles would rewrite every sink, small files or not.
func (o *Options) Validate() error {
	if o.SmallFileSize < 0 || o.MinSmallFiles < 0 {
		return fmt.Errorf("compaction: Options.SmallFileSize %d and MinSmallFiles %d must not be negative", o.SmallFileSize, o.MinSmallFiles)
	}
	return nil
}

// Result is what one Compact run did.
type Result struct {
	Sinks        int   `json:"sinks"`         // sinks whose files were rewritten (the table's Iceberg partitions)
	Skipped      int   `json:"skipped"`       // sinks lost to a concurrent rewrite
	Corrupt      int   `json:"corrupt"`       // sinks left as they are: their files hold a row that is not a valid row of them
	FilesRead    int   `json:"files_read"`    // data files replaced
	FilesWritten int   `json:"files_written"` // data files written
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
	RowsRead     int64 `json:"rows_read"`
	RowsWritten  int64 `json:"rows_written"`
	// ManifestsMerged manifests were merged into ManifestsWritten once the
	// sinks were rewritten (iceberg.Table.MergeManifests).
	ManifestsMerged  int `json:"manifests_merged"`
	ManifestsWritten int `json:"manifests_written"`
	// ManifestMergeError says why the manifests were not merged; the run
	// compacted its sinks all the same. Empty when they were, or when
	// there was nothing to merge.
	ManifestMergeError string `json:"manifest_merge_error,omitempty"`
}

// Compact rewrites, per sink, the coverage table's data files into merged
// rows: each destination's ranges union-merged (overlapping and adjacent
// ranges join; a hole stays a hole), sorted by destination and start. Each
// sink is one replace commit; checkpoints appended meanwhile are kept. A
// sink whose files another compaction already replaced is skipped,
// unchanged. A sink whose files hold a row that is not a valid row of it
// (another engine's) is left as it is, counted in Result.Corrupt, and the
// error wraps coverage.ErrCorrupt once the other sinks are done. Once any
// sink was rewritten, the table's manifests are merged
// (iceberg.Table.MergeManifests).
func Compact(ctx context.Context, t *iceberg.Table, opts Options) (Result, error) {
	opts.EnsureDefaults()
	var res Result
	if err := opts.Validate(); err != nil {
		return res, err
	}
	tbl, err := t.Load(ctx)
	if err != nil || tbl.CurrentSnapshot() == nil {
		return res, err
	}
	bySink, err := iceberg.DataFilesBySink(ctx, tbl)
	if err != nil {
		return res, fmt.Errorf("compaction: refusing to rewrite %s: %w", t.Name(), err)
	}
	var corrupt []error
	for _, sink := range slices.Sorted(maps.Keys(bySink)) {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		group := bySink[sink]
		small := 0
		for _, task := range group {
			if task.File.FileSizeBytes() < opts.SmallFileSize {
				small++
			}
		}
		if small < opts.MinSmallFiles {
			continue
		}
		done, err := compactSink(ctx, t, tbl, sink, group, opts)
		if errors.Is(err, iceberg.ErrInputsGone) {
			opts.Logger.Info("compaction lost a race for a sink; left as it is", "sink", sink, "err", err)
			res.Skipped++
			continue
		}
		if errors.Is(err, coverage.ErrCorrupt) {
			// Its files cannot be replaced without losing that row; the
			// other sinks need not wait for it to be removed.
			opts.Logger.Error("a sink's files are left as they are: they hold a row that is not a valid row of it", "sink", sink, "err", err)
			res.Corrupt++
			corrupt = append(corrupt, err)
			continue
		}
		if err != nil {
			return res, err
		}
		res.Sinks++
		res.FilesRead += done.FilesRead
		res.FilesWritten += done.FilesWritten
		res.BytesRead += done.BytesRead
		res.BytesWritten += done.BytesWritten
		res.RowsRead += done.RowsRead
		res.RowsWritten += done.RowsWritten
		opts.Logger.Info("compacted", "sink", sink, "files_read", done.FilesRead, "files_written", done.FilesWritten)
		if opts.Progress != nil {
			opts.Progress(sink, res)
		}
	}
	if res.Sinks == 0 {
		return res, errors.Join(corrupt...)
	}
	// Each sink's rewrite left a manifest of its own: every reader opens
	// them all to plan, so they are merged into one. The merge only speeds
	// reads: one that fails is a warning, and the next run merges; one
	// that would drop a data file, or might have, is an error.
	merge, err := t.MergeManifests(ctx)
	res.ManifestsMerged, res.ManifestsWritten = merge.Merged, merge.Written
	switch {
	case errors.Is(err, iceberg.ErrUnverifiedWrite) || errors.Is(err, iceberg.ErrMergeUnverified):
		return res, errors.Join(append(corrupt, fmt.Errorf("compaction: %d sinks compacted, then: %w", res.Sinks, err))...)
	case err != nil:
		res.ManifestMergeError = err.Error()
		opts.Logger.Warn("manifests not merged; the next compaction tries again", "err", err)
	default:
		opts.Logger.Info("merged manifests", "merged", merge.Merged, "written", merge.Written)
	}
	return res, errors.Join(corrupt...)
}

// compactSink rewrites one sink's files as read at tbl's snapshot.
func compactSink(ctx context.Context, t *iceberg.Table, tbl *table.Table, sink string, group []table.FileScanTask, opts Options) (Result, error) {
	var res Result
	inputs := make([]ice.DataFile, 0, len(group))
	for _, task := range group {
		inputs = append(inputs, task.File)
		res.FilesRead++
		res.BytesRead += task.File.FileSizeBytes()
		res.RowsRead += task.File.Count()
	}
	before, times, err := iceberg.ReadFilesCoverage(ctx, tbl, sink, group)
	if err != nil {
		return res, fmt.Errorf("compaction: reading sink %s: %w", sink, err)
	}
	c := durable.Checkpoint{Name: opts.Job + "/" + rand.Text(), Writer: opts.Job}
	for _, d := range slices.SortedFunc(maps.Keys(before), coverage.Destination.Compare) {
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: before[d].Ranges()})
		res.RowsWritten += int64(before[d].Len())
	}
	if !opts.SkipVerify {
		if err := verify(before, c.Ranges); err != nil {
			return res, fmt.Errorf("compaction: sink %s: %w", sink, err)
		}
	}
	written, err := t.Rewrite(ctx, tbl, inputs, c, times)
	if err != nil {
		return res, err
	}
	for _, df := range written {
		res.FilesWritten++
		res.BytesWritten += df.FileSizeBytes()
	}
	return res, nil
}

// verify checks that the rows to write cover exactly what the inputs did,
// destination by destination.
func verify(before map[coverage.Destination]*coverage.RangeSet, rows []coverage.DestinationRanges) error {
	after := map[coverage.Destination]*coverage.RangeSet{}
	for _, dr := range rows {
		set := after[dr.Destination]
		if set == nil {
			set = new(coverage.RangeSet)
			after[dr.Destination] = set
		}
		for _, r := range dr.Ranges {
			if err := set.Add(r); err != nil {
				return fmt.Errorf("%w: %s %s: %w", ErrNotSetEqual, dr.Destination, r, err)
			}
		}
	}
	if len(after) != len(before) {
		return fmt.Errorf("%w: %d destinations before, %d after", ErrNotSetEqual, len(before), len(after))
	}
	for d, want := range before {
		if got := after[d]; got == nil || !got.Equal(want) {
			return fmt.Errorf("%w: %s covered %v before, %v after", ErrNotSetEqual, d, want.String(), got)
		}
	}
	return nil
}
