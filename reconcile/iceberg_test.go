package reconcile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/reconcile"
)

var sinkTableSchema = ice.NewSchema(0,
	ice.NestedField{ID: 1, Name: "topic", Type: ice.PrimitiveTypes.String, Required: true},
	ice.NestedField{ID: 2, Name: "part", Type: ice.PrimitiveTypes.Int32, Required: true},
	ice.NestedField{ID: 3, Name: "batch_id", Type: ice.PrimitiveTypes.Int64, Required: true})

// icebergSink is an embedded catalog holding the coverage table (the
// durable tier) and a sink table beside it.
func icebergSink(t *testing.T) (catalog.Catalog, *iceberg.Table, table.Identifier) {
	props, err := iceberg.EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	cov, err := iceberg.Open(ctx, cat, iceberg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{iceberg.DefaultNamespace, "sink"}
	if _, err := cat.CreateTable(ctx, ident, sinkTableSchema); err != nil {
		t.Fatal(err)
	}
	return cat, cov, ident
}

// appendRows appends one row per batch of r of partition p, in a file of
// its own.
func appendRows(t *testing.T, cat catalog.Catalog, ident table.Identifier, p int32, ids ...uint64) {
	t.Helper()
	schema, err := table.SchemaToArrowSchema(sinkTableSchema, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.StringBuilder).Append("t")
		b.Field(1).(*array.Int32Builder).Append(p)
		b.Field(2).(*array.Int64Builder).Append(int64(id))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	rdr, err := array.NewRecordReader(schema, []arrow.RecordBatch{rec})
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Release()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Append(ctx, rdr, nil); err != nil {
		t.Fatal(err)
	}
}

func idsOf(r coverage.Range) []uint64 {
	var out []uint64
	for id := r.Start; id < r.End; id++ {
		out = append(out, id)
	}
	return out
}

// TestIcebergSink: rows dropped by a rewrite after their coverage was
// recorded are reported exactly, in full and sampled, and a replay closes
// them.
func TestIcebergSink(t *testing.T) {
	const sink = "lake"
	cat, cov, ident := icebergSink(t)
	for _, p := range []int32{0, 1} {
		for _, r := range committed {
			appendRows(t, cat, ident, p, idsOf(r)...)
		}
	}
	record(t, cov, sink, "ckpt-1")
	record(t, cov, coverage.RawSink, "ckpt-raw") // what the replays are read from

	// A delete rewrites the data files that held the rows, without them.
	var drop ice.BooleanExpression = ice.AlwaysFalse{}
	for p, ids := range deleted {
		for _, id := range ids {
			drop = ice.NewOr(drop, ice.NewAnd(ice.EqualTo(ice.Reference("part"), p), ice.EqualTo(ice.Reference("batch_id"), int64(id))))
		}
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Delete(ctx, drop, nil); err != nil {
		t.Fatal(err)
	}

	c, err := reconcile.NewIceberg(reconcile.IcebergOptions{Catalog: cat, Table: ident, TopicColumn: "topic", PartitionColumn: "part"})
	if err != nil {
		t.Fatal(err)
	}
	checkers := map[string]reconcile.Checker{sink: c}
	rep, err := reconcile.Run(ctx, cov, checkers, fast())
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "full", rep.Absent, wantAbsent(sink))
	full := rep

	s := &spy{Checker: c}
	o := fast()
	o.Sample, o.Seed = 2, testseed.Seed(t)
	rep, err = reconcile.Run(ctx, cov, map[string]reconcile.Checker{sink: s}, o)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "sampled", rep.Absent, s.expectSampled(sink))

	for _, task := range reconcile.Tasks(full, "", 0) {
		appendRows(t, cat, ident, task.Destination.Partition, idsOf(task.Range)...)
	}
	record(t, cov, sink, "ckpt-2")
	rep, err = reconcile.Run(ctx, cov, checkers, fast())
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "after the replay", rep.Absent, nil)
}

// Without topic and partition columns a table answers for one destination
// only: asked about a second partition, wholly lost, the checker refuses
// rather than report it held from the first partition's rows.
func TestIcebergWithoutDestinationColumnsRefusesASecondDestination(t *testing.T) {
	cat, cov, ident := icebergSink(t)
	appendRows(t, cat, ident, 0, idsOf(coverage.Range{Start: 0, End: 10})...) // partition 0 only
	d0 := coverage.Destination{Sink: "lake", Topic: "t", Partition: 0}
	appendRanges(t, cov, "c0", d0, coverage.Range{Start: 0, End: 10})
	appendRanges(t, cov, "c1", coverage.Destination{Sink: "lake", Topic: "t", Partition: 1}, coverage.Range{Start: 0, End: 10})
	for _, o := range []reconcile.IcebergOptions{{}, {TopicColumn: "topic"}} {
		o.Catalog, o.Table = cat, ident
		c, err := reconcile.NewIceberg(o)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := reconcile.Run(ctx, cov, map[string]reconcile.Checker{"lake": c}, fast())
		var ce *reconcile.CheckError
		if !errors.As(err, &ce) || ce.Sink != "lake" || ce.Destination.Partition != 1 || !strings.Contains(err.Error(), "PartitionColumn") {
			t.Fatalf("options %+v: err %v, want a CheckError of lake's partition 1", o, err)
		}
		sameRows(t, "partition 0", rep.Absent, nil)
		// The first destination is still answered on a later run.
		if _, err := c.Held(ctx, d0, []coverage.Range{{Start: 0, End: 10}}); err != nil {
			t.Fatal(err)
		}
	}
}
