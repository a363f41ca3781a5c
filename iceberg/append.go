package iceberg

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/durable"
)

// Append writes the commit's rows as data files once, verifies them (each
// sink's partition holds exactly its rows; every file is there with its
// size), then commits them in one append snapshot whose summary names the
// writer and the checkpoint and binds the name to the commit's payload. A
// conflicting commit is retried on a freshly loaded table with the same
// files; a commit that failed without proving it did not land is first
// looked for by writer and name, as is one marked MayHaveLanded before
// anything is written. It returns nil only once the snapshot is in the
// table, so a caller may then mark the ranges checkpointed; an error means
// the ranges may or may not be there, and they must stay pending (a
// duplicate row is harmless to coverage). The same writer and name with
// other ranges is ErrNameReused.
func (t *Table) Append(ctx context.Context, c durable.Checkpoint) error {
	if err := c.Validate(); err != nil {
		return err
	}
	st := stamp{name: c.Name, writer: c.Writer, payload: durable.Digest("append", c.Writer, c.Ranges, c.Rows())}
	return t.appendRows(ctx, st, c.MayHaveLanded, func(schema *arrow.Schema) (arrow.RecordBatch, error) {
		return buildRecord(schema, c, time.Now(), nil)
	})
}

// appendRows is Append for any rows: build lays them out in the table's
// arrow schema; st goes to the snapshot summary.
func (t *Table) appendRows(ctx context.Context, st stamp, mayHaveLanded bool, build func(*arrow.Schema) (arrow.RecordBatch, error)) error {
	var tbl *table.Table
	var err error
	if mayHaveLanded {
		if tbl, err = t.Load(ctx); err != nil {
			return err
		}
		if done, err := lookup(tbl, st); done || err != nil {
			return err
		}
	} else if tbl, err = t.base(ctx); err != nil {
		return err
	}
	files, err := t.writeFiles(ctx, tbl, st.name, 0, build)
	if err != nil {
		return err
	}
	return t.run(ctx, commitLoop{
		what:    fmt.Sprintf("commit %s on %s", st.name, t.Name()),
		timeout: t.opts.CommitTimeout,
		commit: func() error {
			txn := tbl.NewTransaction()
			// The files are new, named by iceberg-go's writer: skip scanning
			// every manifest for them, which costs O(table) per commit.
			if err := txn.AddDataFiles(ctx, files, st.props(), table.WithoutDuplicateCheck()); err != nil {
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
	})
}

// writeFiles lays the rows out in tbl's arrow schema with build and writes
// them through the verified writer, in row groups of RowGroupRows and, when
// fileRows is positive, in consecutive slices of at most fileRows rows,
// each written (and verified) apart, so into files of their own: it writes
// coverage rows only (a TableSink's own table keeps its settings).
func (t *Table) writeFiles(ctx context.Context, tbl *table.Table, name string, fileRows int, build func(*arrow.Schema) (arrow.RecordBatch, error)) ([]ice.DataFile, error) {
	schema, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("iceberg: arrow schema of %s: %w", t.Name(), err)
	}
	rec, err := build(schema)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	n := rec.NumRows()
	per := n // rows to a file
	if fileRows > 0 && n > int64(fileRows) {
		per = int64(fileRows)
	}
	var files []ice.DataFile
	for from := int64(0); ; from += per {
		part := rec
		if per < n {
			part = rec.NewSlice(from, min(from+per, n))
		}
		written, err := writeVerified(ctx, tbl, name, part, table.WithParquetRowGroupLimit(RowGroupRows))
		if part != rec {
			part.Release()
		}
		if err != nil {
			return nil, err
		}
		files = append(files, written...)
		if from+per >= n {
			break
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: %s to %s: the writer produced no data file", ErrUnverifiedWrite, name, t.Name())
	}
	return files, nil
}

// buildRecord lays the commit's rows out in the table's arrow schema, looked
// up by column name so that extra columns another engine added stay null;
// each row is recorded at now unless times gives it a time of its own.
func buildRecord(schema *arrow.Schema, c durable.Checkpoint, now time.Time, times RecordedAt) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	col := func(name string) array.Builder {
		idx := schema.FieldIndices(name)
		if len(idx) != 1 {
			return nil
		}
		return b.Field(idx[0])
	}
	sink, topic := col(ColSink).(*array.StringBuilder), col(ColTopic).(*array.StringBuilder)
	partition := col(ColPartition).(*array.Int32Builder)
	start, end := col(ColRangeStart).(*array.Int64Builder), col(ColRangeEnd).(*array.Int64Builder)
	writer, checkpoint := col(ColWriter).(*array.StringBuilder), col(ColCheckpointID).(*array.StringBuilder)
	recordedAt := col(ColRecordedAt).(*array.TimestampBuilder)
	sinkKey, _ := col(ColSinkKey).(*array.StringBuilder)
	if sinkKey == nil {
		return nil, fmt.Errorf("%w: column %s is missing", ErrIncompatibleTable, ColSinkKey)
	}
	ts, err := arrow.TimestampFromTime(now, arrow.Microsecond)
	if err != nil {
		return nil, fmt.Errorf("iceberg: timestamp %s: %w", now, err)
	}
	// Room for every row up front: growing builders of 100,000 rows copies them.
	total, sinkBytes, topicBytes := 0, 0, 0
	for _, dr := range c.Ranges {
		total += len(dr.Ranges)
		sinkBytes += len(dr.Ranges) * len(dr.Destination.Sink)
		topicBytes += len(dr.Ranges) * len(dr.Destination.Topic)
	}
	b.Reserve(total)
	sink.ReserveData(sinkBytes)
	topic.ReserveData(topicBytes)
	writer.ReserveData(total * len(c.Writer))
	checkpoint.ReserveData(total * len(c.Name))
	rows := 0
	for _, dr := range c.Ranges {
		key := PathKey(dr.Destination.Sink)
		own := times[dr.Destination]
		for i, r := range dr.Ranges {
			sinkKey.Append(key)
			sink.Append(dr.Destination.Sink)
			topic.Append(dr.Destination.Topic)
			partition.Append(dr.Destination.Partition)
			start.Append(int64(r.Start))
			end.Append(int64(r.End))
			writer.Append(c.Writer)
			checkpoint.Append(c.Name)
			if i < len(own) && !own[i].IsZero() {
				at, err := arrow.TimestampFromTime(own[i], arrow.Microsecond)
				if err != nil {
					return nil, fmt.Errorf("iceberg: recorded_at %s of %s %s: %w", own[i], dr.Destination, r, err)
				}
				recordedAt.Append(at)
			} else {
				recordedAt.Append(ts)
			}
			rows++
		}
	}
	for i, f := range schema.Fields() {
		if b.Field(i).Len() < rows {
			if !f.Nullable {
				return nil, fmt.Errorf("%w: required column %s is not one covmirror writes", ErrIncompatibleTable, f.Name)
			}
			for b.Field(i).Len() < rows {
				b.Field(i).AppendNull()
			}
		}
	}
	return b.NewRecordBatch(), nil
}
