package tabletest

import (
	"cmp"
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/iceberg"
)

// ForeignRow is a row as another engine might write it into the coverage
// table, through iceberg-go rather than covmirror: a nil field is a null.
type ForeignRow struct {
	Sink, Topic *string
	Partition   *int32
	Start, End  *int64
	// SinkKey, when set, is the partition key written instead of
	// iceberg.PathKey(Sink).
	SinkKey *string
	// RecordedAt is the row's recorded_at; zero: the time of the append.
	RecordedAt time.Time
}

// Valid is a ForeignRow with every field set.
func Valid(sink, topic string, partition int32, start, end int64) ForeignRow {
	return ForeignRow{Sink: &sink, Topic: &topic, Partition: &partition, Start: &start, End: &end}
}

// AppendForeign commits rows to tbl with iceberg-go's own append, as another
// engine would, bypassing covmirror's checks. It reports iceberg-go's error,
// if it refuses them, rather than failing the test.
func AppendForeign(t testing.TB, tbl *iceberg.Table, rows ...ForeignRow) error {
	t.Helper()
	ctx := context.Background()
	loaded, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := table.SchemaToArrowSchema(loaded.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	now := time.Now()
	for _, r := range rows {
		for i, f := range schema.Fields() {
			field := b.Field(i)
			switch f.Name {
			case iceberg.ColSink:
				appendOr(field, r.Sink, func(v string) { field.(*array.StringBuilder).Append(v) })
			case iceberg.ColSinkKey:
				if r.SinkKey != nil {
					field.(*array.StringBuilder).Append(*r.SinkKey)
					break
				}
				appendOr(field, r.Sink, func(v string) { field.(*array.StringBuilder).Append(iceberg.PathKey(v)) })
			case iceberg.ColTopic:
				appendOr(field, r.Topic, func(v string) { field.(*array.StringBuilder).Append(v) })
			case iceberg.ColPartition:
				appendOr(field, r.Partition, func(v int32) { field.(*array.Int32Builder).Append(v) })
			case iceberg.ColRangeStart:
				appendOr(field, r.Start, func(v int64) { field.(*array.Int64Builder).Append(v) })
			case iceberg.ColRangeEnd:
				appendOr(field, r.End, func(v int64) { field.(*array.Int64Builder).Append(v) })
			case iceberg.ColWriter, iceberg.ColCheckpointID:
				field.(*array.StringBuilder).Append("foreign")
			case iceberg.ColRecordedAt:
				at, err := arrow.TimestampFromTime(cmp.Or(r.RecordedAt, now), arrow.Microsecond)
				if err != nil {
					t.Fatal(err)
				}
				field.(*array.TimestampBuilder).Append(at)
			default:
				field.AppendNull()
			}
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	txn := loaded.NewTransaction()
	if err := txn.Append(ctx, rdr, nil); err != nil {
		return err
	}
	_, err = txn.Commit(ctx)
	return err
}

func appendOr[T any](b array.Builder, v *T, appendValue func(T)) {
	if v == nil {
		b.AppendNull()
		return
	}
	appendValue(*v)
}
