package iceberg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// ErrNoMultiTableTransactions: the catalog cannot commit to two tables at
// once (the SQL catalog, for one); a TableSink then writes the sink and
// records coverage one after the other.
var ErrNoMultiTableTransactions = errors.New("catalog has no multi-table transactions")

// TableSinkOptions configures NewTableSink. Zero values are documented
// defaults.
type TableSinkOptions struct {
	// Coverage is the coverage table. Required.
	Coverage *Table
	// Sink is the sink table's identifier in the same catalog. Required.
	Sink table.Identifier
	// Writer names this writer in snapshot summaries and coverage rows.
	// Required.
	Writer string
	// Fallback records coverage when the catalog has no multi-table
	// transactions. Required for that case, where a write without it
	// fails with ErrNoMultiTableTransactions; unused otherwise. Zero value:
	// none.
	Fallback coverage.Store
	// Logger says once that the fallback is in use. Zero value: discard.
	Logger *slog.Logger
}

// EnsureDefaults fills in zero values.
func (o *TableSinkOptions) EnsureDefaults() {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports unusable options.
func (o *TableSinkOptions) Validate() error {
	switch {
	case o.Coverage == nil:
		return errors.New("iceberg: TableSinkOptions.Coverage is nil: open the coverage table with Open")
	case len(o.Sink) == 0:
		return errors.New("iceberg: TableSinkOptions.Sink is empty: name the sink table")
	case o.Writer == "":
		return errors.New("iceberg: TableSinkOptions.Writer is empty: name this writer")
	}
	return nil
}

// TableSink is the exactly-once path of a sink that is itself an Iceberg
// table in the coverage table's catalog: a write of the sink's rows and
// the coverage rows of the same batches land in one multi-table commit, or
// neither does. Where the catalog lacks multi-table transactions it falls
// back to write-then-record through Fallback (the pod's Mirror), and says
// so once in the log.
type TableSink struct {
	opts TableSinkOptions
	once sync.Once
}

// NewTableSink returns the sink table's writer.
func NewTableSink(opts TableSinkOptions) (*TableSink, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	return &TableSink{opts: opts}, nil
}

// Write appends rows to the sink table and records r of d as covered. name
// identifies the write (unique per writer, as a checkpoint name) and is
// bound to it: the snapshot summary carries a digest of the writer, the
// sink table, d, r and the row count. After a commit of unknown outcome,
// and before every write, the writer's name is looked for (in the coverage
// table, or in the sink table without multi-table transactions), so a
// retry never lands twice; the same writer and name with another payload
// is ErrNameReused, and another writer's name is no match. The rows are
// written through the verified writer: every partition's rows in its
// files, each file there with its size, or nothing is committed.
func (s *TableSink) Write(ctx context.Context, name string, d coverage.Destination, r coverage.Range, rows arrow.RecordBatch) error {
	if err := coverage.ValidateRecord(d, r); err != nil {
		return err
	}
	if name == "" {
		return errors.New("iceberg: a table sink write needs a name")
	}
	ranges := []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{r}}}
	st := stamp{name: name, writer: s.opts.Writer,
		payload: durable.Digest("tablesink "+strings.Join(s.opts.Sink, "."), s.opts.Writer, ranges, rows.NumRows())}
	if _, ok := s.opts.Coverage.cat.(catalog.TransactionalCatalog); !ok {
		if s.opts.Fallback == nil {
			return fmt.Errorf("iceberg: sink %s: %w, and no fallback store is set", strings.Join(s.opts.Sink, "."), ErrNoMultiTableTransactions)
		}
		s.once.Do(func() {
			s.opts.Logger.Warn("the catalog has no multi-table transactions: the sink table is written first and coverage recorded after its commit (write-then-record; a crash in between costs a replay, which the sink must deduplicate)",
				"sink", strings.Join(s.opts.Sink, "."), "coverage", s.opts.Coverage.Name())
		})
		return coverage.WriteThenRecord(ctx, s.opts.Fallback, d, r, func(ctx context.Context) error {
			return s.appendSink(ctx, st, rows)
		})
	}
	return s.commitTogether(ctx, st, durable.Checkpoint{Name: name, Writer: s.opts.Writer, Ranges: ranges}, rows)
}

// appendSink appends rows to the sink table alone: files written once, the
// commit retried on fresh metadata, and a retry first looks for name.
func (s *TableSink) appendSink(ctx context.Context, st stamp, rows arrow.RecordBatch) error {
	name, sinkName := st.name, strings.Join(s.opts.Sink, ".")
	sink, err := s.loadSink(ctx)
	if err != nil {
		return err
	}
	if done, err := lookup(sink, st); done || err != nil {
		return err
	}
	files, err := writeVerified(ctx, sink, name, rows)
	if err != nil {
		return err
	}
	return s.opts.Coverage.run(ctx, commitLoop{
		what:    fmt.Sprintf("commit %s on sink table %s", name, sinkName),
		timeout: s.opts.Coverage.opts.CommitTimeout,
		commit: func() error {
			txn := sink.NewTransaction()
			if err := txn.AddDataFiles(ctx, files, st.props(), table.WithoutDuplicateCheck()); err != nil {
				return err
			}
			_, err := txn.Commit(ctx)
			return err
		},
		reload: func() (bool, error) {
			fresh, err := s.opts.Coverage.cat.LoadTable(ctx, s.opts.Sink)
			if err != nil {
				return false, err
			}
			sink = fresh
			return lookup(sink, st)
		},
	})
}

// commitTogether writes both tables' data files once, then commits them in
// one multi-table transaction, rebuilt on freshly loaded metadata after a
// conflict; after an error that does not prove failure it first looks for
// name in the coverage table.
func (s *TableSink) commitTogether(ctx context.Context, st stamp, c durable.Checkpoint, rows arrow.RecordBatch) error {
	name := st.name
	cov, err := s.opts.Coverage.Load(ctx)
	if err != nil {
		return err
	}
	if done, err := lookup(cov, st); done || err != nil {
		return err
	}
	sink, err := s.loadSink(ctx)
	if err != nil {
		return err
	}
	covFiles, err := s.opts.Coverage.writeFiles(ctx, cov, name, 0, func(schema *arrow.Schema) (arrow.RecordBatch, error) {
		return buildRecord(schema, c, time.Now(), nil)
	})
	if err != nil {
		return err
	}
	sinkFiles, err := writeVerified(ctx, sink, name, rows)
	if err != nil {
		return err
	}
	props := st.props()
	return s.opts.Coverage.run(ctx, commitLoop{
		what:    fmt.Sprintf("commit %s on %s and %s", name, strings.Join(s.opts.Sink, "."), s.opts.Coverage.Name()),
		timeout: s.opts.Coverage.opts.CommitTimeout,
		commit:  func() error { return commitBoth(ctx, s.opts.Coverage.cat, sink, sinkFiles, cov, covFiles, props) },
		reload: func() (bool, error) {
			freshCov, err := s.opts.Coverage.Load(ctx)
			if err != nil {
				return false, err
			}
			freshSink, err := s.opts.Coverage.cat.LoadTable(ctx, s.opts.Sink)
			if err != nil {
				return false, err
			}
			cov, sink = freshCov, freshSink
			// Both tables or neither: the coverage table speaks for both.
			return lookup(cov, st)
		},
	})
}

func (s *TableSink) loadSink(ctx context.Context) (*table.Table, error) {
	sink, err := s.opts.Coverage.cat.LoadTable(ctx, s.opts.Sink)
	if err != nil {
		return nil, fmt.Errorf("%w: loading sink table %s: %w", coverage.ErrUnavailable, strings.Join(s.opts.Sink, "."), err)
	}
	return sink, nil
}

// commitBoth stages the files of each table in its own transaction and
// commits the two as one.
func commitBoth(ctx context.Context, cat catalog.Catalog, sink *table.Table, sinkFiles []ice.DataFile, cov *table.Table, covFiles []ice.DataFile, props ice.Properties) error {
	mtx, err := catalog.NewMultiTableTransaction(cat)
	if err != nil {
		return err
	}
	for _, part := range []struct {
		tbl   *table.Table
		files []ice.DataFile
	}{{sink, sinkFiles}, {cov, covFiles}} {
		txn := part.tbl.NewTransaction()
		if err := txn.AddDataFiles(ctx, part.files, props, table.WithoutDuplicateCheck()); err != nil {
			return err
		}
		if err := mtx.AddTransaction(txn); err != nil {
			return err
		}
	}
	return mtx.Commit(ctx)
}
