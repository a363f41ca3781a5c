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

	"github.com/covmirror/covmirror/durable"
)

// ErrInputsGone: a rewrite's input files were removed by a concurrent
// rewrite (another compaction won). Nothing was committed; the files this
// one wrote are orphans for orphan cleanup.
var ErrInputsGone = errors.New("rewrite inputs are no longer in the table")

// compactedFileRows is the file size of Rewrite: CompactedFileRows, which
// tests lower to split small rewrites into many files.
var compactedFileRows = CompactedFileRows

// Rewrite replaces the data files replaced, read from base, with the rows of
// c, in one commit whose summary names c.Writer and c.Name. The new files
// are written once through the verified writer (each sink's rows all in
// its files, every file there with its size), in c's order, at most
// CompactedFileRows rows to a file; a conflicting commit (a checkpoint appended meanwhile) is
// retried on fresh metadata as long as every input file is still live, and
// the appended files are kept, since only the inputs are removed. If a
// concurrent rewrite removed an input it fails with ErrInputsGone and changes
// nothing. times, which may be nil, gives rows the recorded_at they keep
// (a compaction keeps the latest of the rows it merged); the others are
// recorded at the rewrite's time.
func (t *Table) Rewrite(ctx context.Context, base *table.Table, replaced []ice.DataFile, c durable.Checkpoint, times RecordedAt) (written []ice.DataFile, err error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := times.validate(c); err != nil {
		return nil, err
	}
	files, err := t.writeFiles(ctx, base, c.Name, compactedFileRows, func(schema *arrow.Schema) (arrow.RecordBatch, error) {
		return buildRecord(schema, c, time.Now(), times)
	})
	if err != nil {
		return nil, err
	}
	st := stamp{name: c.Name, writer: c.Writer, payload: durable.Digest("rewrite", c.Writer, c.Ranges, c.Rows())}
	tbl := base
	err = t.run(ctx, commitLoop{
		what:    fmt.Sprintf("rewrite %s of %s", c.Name, t.Name()),
		timeout: t.opts.CommitTimeout,
		commit: func() error {
			txn := tbl.NewTransaction()
			if err := txn.ReplaceDataFilesWithDataFiles(ctx, replaced, files, st.props()); err != nil {
				if strings.Contains(err.Error(), "do not belong to the table") {
					return fmt.Errorf("%w: %s: %w", ErrInputsGone, t.Name(), err)
				}
				return err
			}
			next, err := txn.Commit(ctx)
			if err == nil {
				t.remember(next)
			}
			return err
		},
		reload: func() (bool, error) {
			fresh, err := t.Load(ctx)
			if err != nil {
				return false, err
			}
			tbl = fresh
			return lookup(tbl, st)
		},
		final: func(err error) bool { return errors.Is(err, ErrInputsGone) },
	})
	if err != nil {
		return nil, err
	}
	return files, nil
}
