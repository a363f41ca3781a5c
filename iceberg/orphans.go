package iceberg

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// MinOrphanAge is the youngest a file may be and still be deleted as an
// orphan: far above the longest a checkpoint can take between writing its
// data files and committing them (Options.CommitTimeout, 2 minutes by
// default), so a checkpoint in flight never loses its files.
const MinOrphanAge = time.Hour

// OrphanResult is what DeleteOrphanFiles found and removed.
type OrphanResult struct {
	Files   int   // orphan files found (older than the age given)
	Bytes   int64 // their size
	Deleted int   // files deleted (none in a dry run)
}

// DeleteOrphanFiles deletes the files under the table's location that no
// snapshot references and that are older than olderThan (left by killed
// checkpoints and by compactions that lost a race), or with dryRun only
// counts them. The age must exceed the longest commit in flight: a file
// written for a commit not landed yet is not referenced either, so an age
// below MinOrphanAge is refused. A table without a snapshot has nothing to
// clean.
func (t *Table) DeleteOrphanFiles(ctx context.Context, olderThan time.Duration, dryRun bool) (OrphanResult, error) {
	if olderThan < MinOrphanAge {
		return OrphanResult{}, fmt.Errorf("iceberg: orphan cleanup of %s: files younger than %s are refused (asked: %s): a checkpoint in flight could lose its files", t.Name(), MinOrphanAge, olderThan)
	}
	tbl, err := t.Load(ctx)
	if err != nil || tbl.CurrentSnapshot() == nil {
		return OrphanResult{}, err
	}
	if err := t.noTableWithin(ctx, tbl.Location()); err != nil {
		return OrphanResult{}, err
	}
	cleaned, err := tbl.DeleteOrphanFiles(ctx, table.WithFilesOlderThan(olderThan), table.WithDryRun(dryRun))
	if err != nil {
		return OrphanResult{}, fmt.Errorf("iceberg: orphan cleanup of %s: %w", t.Name(), err)
	}
	return OrphanResult{Files: len(cleaned.OrphanFileLocations), Bytes: cleaned.TotalSizeBytes, Deleted: len(cleaned.DeletedFiles)}, nil
}

// noTableWithin refuses a sweep of location when another table of the
// namespace (the gap states table, the positions table, a sink's table)
// lies under it: every file of that table is unreferenced by this one, and
// the sweep would delete them. Tables a catalog places by default are
// siblings; a location set by hand may nest them.
func (t *Table) noTableWithin(ctx context.Context, location string) error {
	root := strings.TrimSuffix(location, "/") + "/"
	namespace := append(table.Identifier{}, t.ident[:len(t.ident)-1]...)
	for ident, err := range t.cat.ListTables(ctx, namespace) {
		if err != nil {
			return fmt.Errorf("iceberg: orphan cleanup of %s: listing the tables beside it, to keep their files: %w", t.Name(), err)
		}
		if slices.Equal(ident, t.ident) {
			continue
		}
		other, err := t.cat.LoadTable(ctx, ident)
		if err != nil {
			return fmt.Errorf("iceberg: orphan cleanup of %s: loading %q, to keep its files: %w", t.Name(), strings.Join(ident, "."), err)
		}
		if loc := strings.TrimSuffix(other.Location(), "/") + "/"; strings.HasPrefix(loc, root) {
			return fmt.Errorf("iceberg: orphan cleanup of %s refused: table %q lies within its location %q, and the sweep would delete its files; move that table elsewhere", t.Name(), strings.Join(ident, "."), location)
		}
	}
	return nil
}
