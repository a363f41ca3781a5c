package iceberg

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ErrInputsGone: a rewrite's input files were removed by a concurrent
// rewrite (another compaction won). Nothing was committed; the files this
// one wrote are orphans for orphan cleanup.
var ErrInputsGone = errors.New("rewrite inputs are no longer in the table")

// Rewrite replaces the data files replaced, read from base, with the rows of
// c, in one commit whose summary names c.Writer and c.Name. The new files
// are written once; a conflicting commit (a checkpoint appended meanwhile) is
// retried on fresh metadata as long as every input file is still live, and
// the appended files are kept, since only the inputs are removed. If a
// concurrent rewrite removed an input it fails with ErrInputsGone and changes
// nothing.
func (t *Table) Rewrite(ctx context.Context, base *table.Table, replaced []ice.DataFile, c Commit) (written []ice.DataFile, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	files, err := t.writeFiles(ctx, base, c.Name, func(schema *arrow.Schema) (arrow.RecordBatch, error) {
		return buildRecord(schema, c, time.Now())
	})
	if err != nil {
		return nil, err
	}
	props := ice.Properties{SummaryWriter: c.Writer, SummaryCheckpoint: c.Name}
	deadline := time.Now().Add(t.opts.CommitTimeout)
	tbl := base
	for attempt := 1; ; attempt++ {
		txn := tbl.NewTransaction()
		err = txn.ReplaceDataFilesWithDataFiles(ctx, replaced, files, props)
		if err != nil && strings.Contains(err.Error(), "do not belong to the table") {
			return nil, fmt.Errorf("%w: %s: %w", ErrInputsGone, t.Name(), err)
		}
		var next *table.Table
		if err == nil {
			next, err = txn.Commit(ctx)
		}
		if err == nil {
			t.remember(next)
			return files, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w: rewrite %s of %s after %d attempts: %w", ErrCommitTimeout, c.Name, t.Name(), attempt, err)
		}
		if !isConflict(err) {
			if err := sleep(ctx, commitBackoff(attempt)); err != nil {
				return nil, err
			}
		}
		if tbl, err = t.Load(ctx); err != nil {
			return nil, err
		}
		if landed(tbl, c.Name) {
			return files, nil
		}
	}
}
