package iceberg

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
)

// DataFiles plans the current snapshot of tbl into its data files, one task
// each. It fails with ErrDeleteFiles if any file has deletes to apply:
// readers of the files alone would count deleted rows as covered.
func DataFiles(ctx context.Context, tbl *table.Table) ([]table.FileScanTask, error) {
	if tbl.CurrentSnapshot() == nil {
		return nil, nil
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: planning the files of %s: %w", coverage.ErrUnavailable, strings.Join(tbl.Identifier(), "."), err)
	}
	if err := noDeleteFiles(tbl, tasks); err != nil {
		return nil, err
	}
	return tasks, nil
}

// noDeleteFiles fails with ErrDeleteFiles if a task of tbl has deletes to
// apply: readers of the data files alone would count deleted rows as
// covered.
func noDeleteFiles(tbl *table.Table, tasks []table.FileScanTask) error {
	for _, task := range tasks {
		if n := len(task.DeleteFiles) + len(task.EqualityDeleteFiles) + len(task.DeletionVectorFiles); n > 0 {
			return fmt.Errorf("%w: %s: data file %s has %d; covmirror never writes them: find the engine that deleted rows from the coverage table",
				ErrDeleteFiles, strings.Join(tbl.Identifier(), "."), task.File.FilePath(), n)
		}
	}
	return nil
}

// DataFilesBySink is DataFiles grouped by the sink each file holds (one
// sink per file, the table's partitioning). A file whose sink cannot be
// told is an error: rewriting a sink without it would leave its rows.
func DataFilesBySink(ctx context.Context, tbl *table.Table) (map[string][]table.FileScanTask, error) {
	tasks, err := DataFiles(ctx, tbl)
	if err != nil {
		return nil, err
	}
	bySink := map[string][]table.FileScanTask{}
	for _, task := range tasks {
		sink, ok := SinkOf(task.File)
		if !ok {
			return nil, fmt.Errorf("%w: data file %s of %s has no sink partition value", coverage.ErrCorrupt, task.File.FilePath(), strings.Join(tbl.Identifier(), "."))
		}
		bySink[sink] = append(bySink[sink], task)
	}
	return bySink, nil
}
