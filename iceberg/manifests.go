package iceberg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"
)

// ManifestMerge is what one MergeManifests did.
type ManifestMerge struct {
	Merged  int `json:"manifests_merged"`  // manifests replaced
	Written int `json:"manifests_written"` // manifests that replaced them
}

// MergeManifests merges the current snapshot's data manifests into as few
// as iceberg-go's target manifest size allows, in one commit that changes
// no data file. Every reader opens each manifest of the snapshot to plan
// (a read of one partition included); after compaction replaced each
// sink's files in its own commit, one manifest per sink and one of removed
// entries remain, and merging them halves a Resume's planning.
//
// Before it commits, and again once committed, it checks that every data
// file live before is live after with its row count (a commit of
// checkpoints that landed meanwhile may add files, never remove them); a
// merge that would drop one is not committed (ErrUnverifiedWrite). A
// conflicting commit is retried on fresh metadata until
// Options.CommitTimeout; nothing to merge commits nothing.
func (t *Table) MergeManifests(ctx context.Context) (ManifestMerge, error) {
	deadline := time.Now().Add(t.opts.CommitTimeout)
	for attempt := 1; ; attempt++ {
		tbl, err := t.Load(ctx)
		if err != nil || tbl.CurrentSnapshot() == nil {
			return ManifestMerge{}, err
		}
		before, err := liveFiles(ctx, tbl)
		if err != nil {
			return ManifestMerge{}, err
		}
		txn := tbl.NewTransaction()
		res, err := txn.RewriteManifests(ctx)
		if err == nil && res.IsNoOp() {
			return ManifestMerge{}, nil
		}
		if err == nil {
			err = checkStaged(ctx, txn, before)
		}
		var next *table.Table
		if err == nil {
			next, err = txn.Commit(ctx)
		}
		if err == nil {
			t.remember(next)
			if err := keepsFiles(ctx, next, before); errors.Is(err, errFileDropped) {
				return ManifestMerge{}, fmt.Errorf("%w: merging manifests of %s, as committed: %w; the files are still in the warehouse: restore them with a rollback to snapshot %d",
					ErrUnverifiedWrite, t.Name(), err, tbl.CurrentSnapshot().SnapshotID)
			}
			return ManifestMerge{Merged: len(res.RewrittenManifests), Written: len(res.AddedManifests)}, nil
		}
		if errors.Is(err, ErrUnverifiedWrite) || ctx.Err() != nil || time.Now().After(deadline) || !isConflict(err) {
			return ManifestMerge{}, fmt.Errorf("iceberg: merging manifests of %s (attempt %d): %w", t.Name(), attempt, err)
		}
	}
}

// liveFiles maps each data file of tbl's current snapshot to its rows.
func liveFiles(ctx context.Context, tbl *table.Table) (map[string]int64, error) {
	tasks, err := DataFiles(ctx, tbl)
	if err != nil {
		return nil, err
	}
	files := make(map[string]int64, len(tasks))
	for _, task := range tasks {
		files[task.File.FilePath()] = task.File.Count()
	}
	return files, nil
}

// checkStaged is keepsFiles on the snapshot txn would commit.
func checkStaged(ctx context.Context, txn *table.Transaction, before map[string]int64) error {
	staged, err := txn.StagedTable()
	if err != nil {
		return err
	}
	err = keepsFiles(ctx, staged.Table, before)
	if errors.Is(err, errFileDropped) {
		return fmt.Errorf("%w: not committed: %w", ErrUnverifiedWrite, err)
	}
	return err
}

// errFileDropped: a merge of manifests left out a data file.
var errFileDropped = errors.New("a data file was dropped")

// keepsFiles reports a data file of before that tbl's current snapshot does
// not hold with the same rows.
func keepsFiles(ctx context.Context, tbl *table.Table, before map[string]int64) error {
	after, err := liveFiles(ctx, tbl)
	if err != nil {
		return err
	}
	for path, rows := range before {
		got, ok := after[path]
		if !ok {
			return fmt.Errorf("%w: %s is no longer live", errFileDropped, path)
		}
		if got != rows {
			return fmt.Errorf("%w: %s is listed with %d rows, not %d", errFileDropped, path, got, rows)
		}
	}
	return nil
}
