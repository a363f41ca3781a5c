package iceberg

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
)

var sinkSchema = ice.NewSchema(0,
	ice.NestedField{ID: 1, Name: "batch_id", Type: ice.PrimitiveTypes.Int64, Required: true},
	ice.NestedField{ID: 2, Name: "payload", Type: ice.PrimitiveTypes.String, Required: true})

// createSinkTable creates the sink table beside the coverage table.
func createSinkTable(t testing.TB, cov *Table) table.Identifier {
	t.Helper()
	ident := table.Identifier{cov.ident[0], "lakehouse"}
	if _, err := cov.cat.CreateTable(context.Background(), ident, sinkSchema); err != nil {
		t.Fatalf("creating the sink table: %v", err)
	}
	return ident
}

// sinkRows are one row per batch of r, in the sink table's schema.
func sinkRows(r coverage.Range) arrow.RecordBatch {
	schema, _ := table.SchemaToArrowSchema(sinkSchema, nil, true, false)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for id := r.Start; id < r.End; id++ {
		b.Field(0).(*array.Int64Builder).Append(int64(id))
		b.Field(1).(*array.StringBuilder).Append("batch")
	}
	return b.NewRecordBatch()
}

// sinkBatches are the batch ids the sink table holds.
func sinkBatches(t testing.TB, cov *Table, ident table.Identifier) *coverage.RangeSet {
	t.Helper()
	tbl, err := cov.cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	out := new(coverage.RangeSet)
	if tbl.CurrentSnapshot() == nil {
		return out
	}
	_, records, err := tbl.Scan(table.WithSelectedFields("batch_id")).ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range records {
		if err != nil {
			t.Fatal(err)
		}
		ids := rec.Column(0).(*array.Int64)
		for i := range ids.Len() {
			_ = out.Add(coverage.Range{Start: uint64(ids.Value(i)), End: uint64(ids.Value(i)) + 1})
		}
		rec.Release()
	}
	return out
}

// countingHandler counts log records.
type countingHandler struct {
	mu       sync.Mutex
	messages []string
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.messages = append(h.messages, r.Message)
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }

// TestTableSinkFallsBackWithoutMultiTableTransactions: the SQL catalog
// cannot commit two tables at once, so the sink table is written first and
// coverage recorded through the fallback store after it; the log says so
// once.
func TestTableSinkFallsBackWithoutMultiTableTransactions(t *testing.T) {
	ctx := context.Background()
	cov := openEmbedded(t)
	ident := createSinkTable(t, cov)
	store := coverage.NewInMemory()
	logs := &countingHandler{}
	s := newTableSink(t, TableSinkOptions{Coverage: cov, Sink: ident, Writer: "pod", Fallback: store, Logger: slog.New(logs)})
	d := coverage.Destination{Sink: "lakehouse", Topic: "orders"}
	for i, r := range []coverage.Range{{Start: 1, End: 5}, {Start: 5, End: 9}} {
		if err := s.Write(ctx, "pod/"+string(rune('1'+i)), d, r, sinkRows(r)); err != nil {
			t.Fatal(err)
		}
	}
	if got := sinkBatches(t, cov, ident); got.String() != "{[1,9)}" {
		t.Fatalf("the sink table holds %s", got)
	}
	if got, _ := store.Covered(ctx, d); got.String() != "{[1,9)}" {
		t.Fatalf("the fallback store covers %s", got.String())
	}
	if len(logs.messages) != 1 || !strings.Contains(logs.messages[0], "no multi-table transactions") {
		t.Fatalf("log: %q, want one warning", logs.messages)
	}
	s = newTableSink(t, TableSinkOptions{Coverage: cov, Sink: ident, Writer: "pod"})
	if err := s.Write(ctx, "pod/3", d, coverage.Range{Start: 9, End: 10}, sinkRows(coverage.Range{Start: 9, End: 10})); err == nil {
		t.Fatal("a write without multi-table transactions or a fallback was accepted")
	}
}

func newTableSink(t *testing.T, opts TableSinkOptions) *TableSink {
	t.Helper()
	s, err := NewTableSink(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTableSinkOptionsValidate: a table sink without its coverage table,
// sink table or writer is refused when it is made, not at its first write.
func TestTableSinkOptionsValidate(t *testing.T) {
	cov := &Table{}
	for _, opts := range []TableSinkOptions{
		{Sink: []string{"ns", "s"}, Writer: "w"},
		{Coverage: cov, Writer: "w"},
		{Coverage: cov, Sink: []string{"ns", "s"}},
	} {
		if _, err := NewTableSink(opts); err == nil {
			t.Errorf("NewTableSink(%+v) = nil error", opts)
		}
	}
	if _, err := NewTableSink(TableSinkOptions{Coverage: cov, Sink: []string{"ns", "s"}, Writer: "w"}); err != nil {
		t.Errorf("NewTableSink with every required field: %v", err)
	}
}
