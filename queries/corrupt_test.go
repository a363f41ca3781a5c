package queries

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/recovery"
)

// A row another engine appended that is not a valid range is refused by
// the queries as the Go readers refuse it, with coverage.ErrCorrupt, on
// either binding: taken as coverage, it could close a gap (a null start
// read as zero) or count batches twice.
func TestForeignRowsThatAreNotRangesAreRefused(t *testing.T) {
	valid := tabletest.Valid("lake", "orders", 0, 20, 30)
	with := func(change func(*tabletest.ForeignRow)) tabletest.ForeignRow {
		r := valid
		change(&r)
		return r
	}
	// iceberg-go writes a null in a required column as the type's zero
	// value: a null end reads as 0 (an inverted range) and a null sink or
	// topic as "" (no destination). A null start or partition reads as 0,
	// which is a valid value no reader can tell from a real one.
	cases := map[string]tabletest.ForeignRow{
		"inverted":           tabletest.Valid("lake", "orders", 0, 30, 20),
		"empty":              tabletest.Valid("lake", "orders", 0, 20, 20),
		"negative start":     tabletest.Valid("lake", "orders", 0, -5, 20),
		"negative partition": tabletest.Valid("lake", "orders", -1, 20, 30),
		"empty sink":         tabletest.Valid("", "orders", 0, 20, 30),
		"null end":           with(func(r *tabletest.ForeignRow) { r.End = nil }),
		"null sink":          with(func(r *tabletest.ForeignRow) { r.Sink = nil }),
		"null topic":         with(func(r *tabletest.ForeignRow) { r.Topic = nil }),
	}
	for name, row := range cases {
		t.Run(name, func(t *testing.T) {
			tbl := openTable(t)
			if err := tbl.Append(ctx, durable.Checkpoint{Name: "c1", Writer: "pod", Ranges: []coverage.DestinationRanges{
				{Destination: coverage.Destination{Sink: "raw", Topic: "orders"}, Ranges: []coverage.Range{{Start: 0, End: 100}}},
				{Destination: coverage.Destination{Sink: "lake", Topic: "orders"}, Ranges: []coverage.Range{{Start: 0, End: 10}}},
			}}); err != nil {
				t.Fatal(err)
			}
			if err := tabletest.AppendForeign(t, tbl, valid, row); err != nil {
				// Nothing to read back: the table has no such row.
				t.Skipf("iceberg-go now refuses to append it: %v", err)
			}
			loaded, err := tbl.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := iceberg.ReadCoverage(ctx, loaded, durable.Filter{}); !errors.Is(err, coverage.ErrCorrupt) {
				t.Errorf("the Go reader: %v, want ErrCorrupt", err)
			}
			if _, err := recovery.Plan(ctx, tbl, recovery.PlanOptions{}); !errors.Is(err, coverage.ErrCorrupt) {
				t.Errorf("the planner: %v, want ErrCorrupt", err)
			}
			for _, binding := range []Binding{ReadParquet, Scan} {
				db, err := Open(ctx, tbl, Options{Binding: binding})
				if err == nil {
					_ = db.Close()
				}
				if !errors.Is(err, coverage.ErrCorrupt) {
					t.Errorf("binding %s: %v, want ErrCorrupt", binding, err)
				} else {
					t.Logf("binding %s: %v", binding, err)
				}
			}
		})
	}
}

// The Scan binding appends a null as NULL, not as Value's zero, so that
// checkRows refuses it: a null start taken as 0 would cover from batch 0.
// (iceberg-go writes nulls in required columns as zeros; another writer
// may not.)
func TestScanBindingKeepsNulls(t *testing.T) {
	schema, err := table.SchemaToArrowSchema(iceberg.CoverageSchema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, column := range []string{iceberg.ColSink, iceberg.ColTopic, iceberg.ColPartition, iceberg.ColRangeStart, iceberg.ColRangeEnd} {
		t.Run(column, func(t *testing.T) {
			rec := foreignRecord(t, schema, column)
			defer rec.Release()
			db, err := sql.Open("duckdb", "")
			if err != nil {
				t.Fatal(err)
			}
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			q := &DB{db: db, conn: conn}
			defer q.Close()
			if _, err := conn.ExecContext(ctx, `CREATE TABLE coverage (`+coverageColumns+`)`); err != nil {
				t.Fatal(err)
			}
			if err := q.appendTo(ctx, "coverage", func(add func(...driver.Value) error) error { return appendRecord(rec, add) }); err != nil {
				t.Fatal(err)
			}
			if err := q.checkRows(ctx); !errors.Is(err, coverage.ErrCorrupt) {
				t.Fatalf("a null %s: %v, want ErrCorrupt", column, err)
			} else {
				t.Log(err)
			}
		})
	}
}

// foreignRecord is one valid row in schema with column null.
func foreignRecord(t *testing.T, schema *arrow.Schema, column string) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	at, _ := arrow.TimestampFromTime(time.Now(), arrow.Microsecond)
	for i, f := range schema.Fields() {
		field := b.Field(i)
		if f.Name == column {
			field.AppendNull()
			continue
		}
		switch f.Name {
		case iceberg.ColSink, iceberg.ColSinkKey, iceberg.ColTopic, iceberg.ColWriter, iceberg.ColCheckpointID:
			field.(*array.StringBuilder).Append("x")
		case iceberg.ColPartition:
			field.(*array.Int32Builder).Append(0)
		case iceberg.ColRangeStart:
			field.(*array.Int64Builder).Append(5)
		case iceberg.ColRangeEnd:
			field.(*array.Int64Builder).Append(10)
		case iceberg.ColRecordedAt:
			field.(*array.TimestampBuilder).Append(at)
		default:
			field.AppendNull()
		}
	}
	return b.NewRecordBatch()
}
