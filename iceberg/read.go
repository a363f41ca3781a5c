package iceberg

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// filterExpr is f as a row filter.
func filterExpr(f durable.Filter) ice.BooleanExpression {
	var e ice.BooleanExpression = ice.AlwaysTrue{}
	if f.Sink != "" {
		// The key prunes files by partition; the name picks the rows (a
		// hashed key may be shared).
		e = ice.NewAnd(e, ice.EqualTo(ice.Reference(ColSinkKey), PathKey(f.Sink)))
		e = ice.NewAnd(e, ice.EqualTo(ice.Reference(ColSink), f.Sink))
	}
	if f.Topic != "" {
		e = ice.NewAnd(e, ice.EqualTo(ice.Reference(ColTopic), f.Topic))
	}
	if f.Partition != nil {
		e = ice.NewAnd(e, ice.EqualTo(ice.Reference(ColPartition), *f.Partition))
	}
	if len(f.Partitions) > 0 {
		e = ice.NewAnd(e, partitionsExpr(f.PartitionSet()))
	}
	return e
}

// maxExactPartitions is how many partitions a row filter names one by one;
// past it the filter is coarser (see partitionsExpr).
const maxExactPartitions = 64

// partitionsExpr selects the rows of set's partitions. The table is
// partitioned by sink only, so no partition of the table is skipped by it:
// data files are pruned by their topic and partition column bounds, and
// rows by the residual. Up to maxExactPartitions it is exact; past it, a
// filter of the topics and of the partition numbers (their cross product,
// a superset) keeps the expression small, and ReadRows matches each row
// after the scan.
func partitionsExpr(set map[coverage.TopicPartition]struct{}) ice.BooleanExpression {
	if len(set) <= maxExactPartitions {
		var e ice.BooleanExpression = ice.AlwaysFalse{}
		for tp := range set {
			e = ice.NewOr(e, ice.NewAnd(ice.EqualTo(ice.Reference(ColTopic), tp.Topic), ice.EqualTo(ice.Reference(ColPartition), tp.Partition)))
		}
		return e
	}
	topics, parts := map[string]bool{}, map[int32]bool{}
	for tp := range set {
		topics[tp.Topic], parts[tp.Partition] = true, true
	}
	return ice.NewAnd(ice.IsIn(ice.Reference(ColTopic), slices.Collect(maps.Keys(topics))...),
		ice.IsIn(ice.Reference(ColPartition), slices.Collect(maps.Keys(parts))...))
}

// Coverage reads the committed coverage of every destination the filter
// selects: the union of the rows, merged per destination.
func (t *Table) Coverage(ctx context.Context, f durable.Filter) (map[coverage.Destination]*coverage.RangeSet, error) {
	tbl, err := t.Load(ctx)
	if err != nil {
		return nil, err
	}
	return ReadCoverage(ctx, tbl, f)
}

// ReadCoverage is Coverage on already loaded table metadata.
func ReadCoverage(ctx context.Context, tbl *table.Table, f durable.Filter) (map[coverage.Destination]*coverage.RangeSet, error) {
	out := map[coverage.Destination]*coverage.RangeSet{}
	err := ReadRows(ctx, tbl, f, false, func(r Row) error {
		set := out[r.Destination]
		if set == nil {
			set = new(coverage.RangeSet)
			out[r.Destination] = set
		}
		return set.Add(r.Range)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Row is one row of the coverage table, as readers need it.
type Row struct {
	Destination coverage.Destination
	Range       coverage.Range
	// RecordedAt is when the row's checkpoint was committed (UTC); zero
	// unless read with recordedAt.
	RecordedAt time.Time
}

// ReadRows calls fn for every row of tbl's current snapshot that f
// selects, in no particular order, reading recorded_at too where
// recordedAt says so. A row that is not a valid range of a destination is
// ErrCorrupt.
func ReadRows(ctx context.Context, tbl *table.Table, f durable.Filter, recordedAt bool, fn func(Row) error) error {
	if tbl.CurrentSnapshot() == nil {
		return nil
	}
	scan := tbl.Scan(table.WithRowFilter(filterExpr(f)), table.WithSelectedFields(rowFields(recordedAt)...), table.WithArrowBatchSize(readBatchRows))
	_, records, err := scan.ToArrowRecords(ctx)
	if len(f.Partitions) > maxExactPartitions {
		// The row filter was a superset (partitionsExpr).
		match, each := f.Matcher(), fn
		fn = func(r Row) error {
			if !match(r.Destination) {
				return nil
			}
			return each(r)
		}
	}
	return readRecords(tbl, records, err, recordedAt, fn)
}

// ReadFileRows is ReadRows over every row of exactly the data files of
// tasks, whatever their sink column says: what a rewrite of those files
// must carry.
func ReadFileRows(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, recordedAt bool, fn func(Row) error) error {
	if len(tasks) == 0 {
		return nil
	}
	if err := noDeleteFiles(tbl, tasks); err != nil {
		return err
	}
	// A task's residual filter would drop rows: every row is wanted.
	whole := make([]table.FileScanTask, len(tasks))
	for i, task := range tasks {
		whole[i] = task
		whole[i].Residual = nil
	}
	scan := tbl.Scan(table.WithSelectedFields(rowFields(recordedAt)...), table.WithArrowBatchSize(readBatchRows))
	_, records, err := scan.ReadTasks(ctx, whole)
	return readRecords(tbl, records, err, recordedAt, fn)
}

// rowFields are the columns the readers select.
func rowFields(recordedAt bool) []string {
	fields := []string{ColSink, ColTopic, ColPartition, ColRangeStart, ColRangeEnd}
	if recordedAt {
		fields = append(fields, ColRecordedAt)
	}
	return fields
}

// readRecords calls fn for each row of records, the answer of a scan
// that failed to start with err, or not.
func readRecords(tbl *table.Table, records iter.Seq2[arrow.RecordBatch, error], err error, recordedAt bool, fn func(Row) error) error {
	if err != nil {
		return fmt.Errorf("%w: scanning %s: %w", coverage.ErrUnavailable, tbl.Identifier(), err)
	}
	for rec, err := range records {
		if err != nil {
			return fmt.Errorf("%w: reading %s: %w", coverage.ErrUnavailable, tbl.Identifier(), err)
		}
		err = eachRow(rec, recordedAt, fn)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return nil
}

// corruptRowAdvice ends the error for a row that is not a valid range of a
// destination.
const corruptRowAdvice = "rows of the coverage table are written only by covmirror: remove it, or roll back the snapshot that added it"

func eachRow(rec arrow.RecordBatch, recordedAt bool, fn func(Row) error) error {
	col := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil
		}
		return rec.Column(idx[0])
	}
	sink, sinkOK := col(ColSink).(*array.String)
	topic, topicOK := col(ColTopic).(*array.String)
	partition, partOK := col(ColPartition).(*array.Int32)
	start, startOK := col(ColRangeStart).(*array.Int64)
	end, endOK := col(ColRangeEnd).(*array.Int64)
	at, atOK := col(ColRecordedAt).(*array.Timestamp)
	if !sinkOK || !topicOK || !partOK || !startOK || !endOK || (recordedAt && !atOK) {
		return fmt.Errorf("%w: scan returned columns %s", ErrIncompatibleTable, rec.Schema())
	}
	var unit arrow.TimeUnit
	if recordedAt {
		unit = at.DataType().(*arrow.TimestampType).Unit
	}
	// The columns are required, but a file another engine wrote may still
	// hold nulls, which Value reads as zero: a null start would cover from
	// batch 0.
	nulls := sink.NullN() + topic.NullN() + partition.NullN() + start.NullN() + end.NullN()
	if recordedAt {
		nulls += at.NullN()
	}
	shown := func(i int) string {
		name := func(a *array.String) string {
			if a.IsNull(i) {
				return "NULL"
			}
			return fmt.Sprintf("%q", a.Value(i))
		}
		return fmt.Sprintf("sink %s, topic %s, partition %s, range_start %s, range_end %s",
			name(sink), name(topic), partition.ValueStr(i), start.ValueStr(i), end.ValueStr(i))
	}
	// Rows come grouped by destination: each run's is validated once.
	var valid coverage.Destination
	validated := false
	for i := 0; i < int(rec.NumRows()); i++ {
		if nulls > 0 && (sink.IsNull(i) || topic.IsNull(i) || partition.IsNull(i) || start.IsNull(i) || end.IsNull(i) || (recordedAt && at.IsNull(i))) {
			return fmt.Errorf("%w: a row holds a null in a required column (%s); %s", coverage.ErrCorrupt, shown(i), corruptRowAdvice)
		}
		d := coverage.Destination{Sink: sink.Value(i), Topic: topic.Value(i), Partition: partition.Value(i)}
		if !validated || d != valid {
			if err := d.Validate(); err != nil {
				return fmt.Errorf("%w: a row names no valid destination (%s): %w; %s", coverage.ErrCorrupt, shown(i), err, corruptRowAdvice)
			}
			valid, validated = d, true
		}
		s, e := start.Value(i), end.Value(i)
		if s < 0 || e <= s {
			return fmt.Errorf("%w: row %s %d..%d is not a valid range; %s", coverage.ErrCorrupt, d, s, e, corruptRowAdvice)
		}
		r := Row{Destination: d, Range: coverage.Range{Start: uint64(s), End: uint64(e)}}
		if recordedAt {
			r.RecordedAt = at.Value(i).ToTime(unit).UTC()
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}
