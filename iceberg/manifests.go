package iceberg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// ManifestMerge is what one MergeManifests did.
type ManifestMerge struct {
	Merged  int `json:"manifests_merged"`  // manifests replaced
	Written int `json:"manifests_written"` // manifests that replaced them
}

// mergeAttempts bounds the commits one MergeManifests tries: a merge is
// optional, rewrites manifests the size of the table on each attempt, and
// loses every race with a steady stream of checkpoints it is slower than.
const mergeAttempts = 4

// MergeManifests merges the current snapshot's data manifests into as few
// as iceberg-go's target manifest size allows, in one commit that changes
// no data file. Every reader opens each manifest of the snapshot to plan (a
// read of one partition included); after compaction replaced each sink's
// files in its own commit, one manifest per sink and one of removed entries
// remain, and merging them halves a Resume's planning.
//
// Before it commits, the merged listing must hold exactly the data files
// of the snapshot it merged, each with its rows (ErrUnverifiedWrite, and
// nothing committed, if not). Once committed (iceberg-go may have rebuilt
// it on a newer snapshot), the committed snapshot must list exactly the
// files of its parent (ErrMergeUnverified if not, or if that cannot be
// read). A failed or conflicting attempt is retried on fresh metadata, a
// few times within Options.CommitTimeout; a merge that landed though its
// answer was lost leaves nothing to merge, so the next attempt finds
// nothing and commits nothing.
func (t *Table) MergeManifests(ctx context.Context) (ManifestMerge, error) {
	var done ManifestMerge
	attempts := 0
	err := t.run(ctx, commitLoop{
		what:    "merge of the manifests of " + t.Name(),
		timeout: t.opts.CommitTimeout,
		commit: func() error {
			attempts++
			var err error
			done, err = t.mergeOnce(ctx)
			return err
		},
		reload: func() (bool, error) { return false, nil }, // each attempt loads afresh
		final: func(err error) bool {
			return attempts >= mergeAttempts || errors.Is(err, ErrUnverifiedWrite) ||
				errors.Is(err, ErrMergeUnverified) || errors.Is(err, ErrDeleteFiles)
		},
	})
	if err != nil && attempts >= mergeAttempts && isConflict(err) {
		return ManifestMerge{}, fmt.Errorf("%w: merging the manifests of %s: %d attempts lost the race with other commits: %w", ErrCommitTimeout, t.Name(), attempts, err)
	}
	if err != nil {
		return ManifestMerge{}, fmt.Errorf("iceberg: merging the manifests of %s (attempt %d): %w", t.Name(), attempts, err)
	}
	return done, nil
}

// mergeOnce is one attempt of MergeManifests.
func (t *Table) mergeOnce(ctx context.Context) (ManifestMerge, error) {
	tbl, err := t.Load(ctx)
	if err != nil || tbl.CurrentSnapshot() == nil {
		return ManifestMerge{}, err
	}
	before, err := liveFiles(ctx, tbl, tbl.Scan())
	if err != nil {
		return ManifestMerge{}, err
	}
	txn := tbl.NewTransaction()
	res, err := txn.RewriteManifests(ctx)
	if err == nil && res.IsNoOp() && isMerge(tbl.CurrentSnapshot()) {
		// Nothing to merge after a merge: perhaps an attempt of this call
		// whose answer was lost, so unchecked.
		err = checkMerged(ctx, tbl)
	}
	if err != nil || res.IsNoOp() {
		return ManifestMerge{}, err
	}
	staged, err := txn.StagedTable()
	if err != nil {
		return ManifestMerge{}, err
	}
	after, err := liveFiles(ctx, staged.Table, staged.Table.Scan()) // StagedTable.Scan panics; its Table plans
	if err != nil {
		return ManifestMerge{}, err
	}
	if diff := fileDiff(before, after); diff != "" {
		return ManifestMerge{}, fmt.Errorf("%w: the merged manifests of snapshot %d, not committed: %s", ErrUnverifiedWrite, tbl.CurrentSnapshot().SnapshotID, diff)
	}
	next, err := txn.Commit(ctx)
	if err != nil {
		return ManifestMerge{}, err
	}
	t.remember(next)
	if err := checkMerged(ctx, next); err != nil {
		return ManifestMerge{}, err
	}
	return ManifestMerge{Merged: len(res.RewrittenManifests), Written: len(res.AddedManifests)}, nil
}

// isMerge reports a snapshot committed by a merge of manifests, by the
// summary iceberg-go gives one.
func isMerge(snap *table.Snapshot) bool {
	if snap == nil || snap.Summary == nil || snap.Summary.Operation != table.OpReplace {
		return false
	}
	_, ok := snap.Summary.Properties["manifests-created"]
	return ok
}

// checkMerged checks that tbl's current snapshot, a merge of manifests,
// lists exactly the data files of its parent.
func checkMerged(ctx context.Context, tbl *table.Table) error {
	snap := tbl.CurrentSnapshot()
	if snap.ParentSnapshotID == nil {
		return fmt.Errorf("%w: the merge committed as snapshot %d, which has no parent to check it against", ErrMergeUnverified, snap.SnapshotID)
	}
	parent := *snap.ParentSnapshotID
	before, err := liveFiles(ctx, tbl, tbl.Scan(table.WithSnapshotID(parent)))
	if err == nil {
		var after map[string]int64
		if after, err = liveFiles(ctx, tbl, tbl.Scan()); err == nil {
			if diff := fileDiff(before, after); diff != "" {
				return fmt.Errorf("%w: the merge committed as snapshot %d: %s, against snapshot %d before it; no data file was deleted: "+
					"add a missing one back to the table with an engine's add_files (a rollback would drop every commit since)",
					ErrMergeUnverified, snap.SnapshotID, diff, parent)
			}
			return nil
		}
	}
	return fmt.Errorf("%w: the merge committed as snapshot %d, and its data files could not be read to check them against snapshot %d: %w; "+
		"run the compaction again to check it", ErrMergeUnverified, snap.SnapshotID, parent, err)
}

// liveFiles maps each data file a scan of tbl plans to its rows; a table
// with row-level deletes is refused (noDeleteFiles).
func liveFiles(ctx context.Context, tbl *table.Table, scan *table.Scan) (map[string]int64, error) {
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("planning data files: %w", err)
	}
	if err := noDeleteFiles(tbl, tasks); err != nil {
		return nil, err
	}
	files := make(map[string]int64, len(tasks))
	for _, task := range tasks {
		files[task.File.FilePath()] = task.File.Count()
	}
	return files, nil
}

// fileDiff describes how the data files of after differ from before's
// (missing, added, or listed with other row counts); "" when they do not.
func fileDiff(before, after map[string]int64) string {
	var diffs []string
	for path, rows := range before {
		got, ok := after[path]
		switch {
		case !ok:
			diffs = append(diffs, "data file "+path+" is missing")
		case got != rows:
			diffs = append(diffs, fmt.Sprintf("data file %s is listed with %d rows, not %d", path, got, rows))
		}
	}
	for path := range after {
		if _, ok := before[path]; !ok {
			diffs = append(diffs, "data file "+path+" was added")
		}
	}
	slices.Sort(diffs)
	if len(diffs) > 3 {
		diffs = append(diffs[:3], fmt.Sprintf("and %d more", len(diffs)-3))
	}
	return strings.Join(diffs, "; ")
}
