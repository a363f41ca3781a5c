package iceberg_test

import (
	"context"
	"testing"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// ReadFileRows reads every row of the files of its tasks, even tasks
// planned by a filtered scan (sink = 'lake'), whose residual filter would
// drop a stray row of another sink: ReadFilesCoverage then refuses it.
func TestReadFileRowsIgnoresResiduals(t *testing.T) {
	ctx := context.Background()
	tbl := tabletest.EmbeddedTable(t)
	if err := tbl.Append(ctx, durable.Checkpoint{Name: "c", Writer: "pod", Ranges: []coverage.DestinationRanges{
		{Destination: coverage.Destination{Sink: "lake", Topic: "orders"}, Ranges: []coverage.Range{{Start: 0, End: 10}}},
	}}); err != nil {
		t.Fatal(err)
	}
	row := tabletest.Valid("other", "orders", 0, 50, 60)
	key := iceberg.PathKey("lake")
	row.SinkKey = &key
	// One file holding a lake row and the stray row, both under lake's key.
	if err := tabletest.AppendForeign(t, tbl, tabletest.Valid("lake", "orders", 0, 20, 30), row); err != nil {
		t.Fatal(err)
	}
	loaded, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	filtered, err := loaded.Scan(table.WithRowFilter(ice.NewAnd(
		ice.EqualTo(ice.Reference(iceberg.ColSinkKey), key),
		ice.EqualTo(ice.Reference(iceberg.ColSink), "lake")))).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range filtered {
		t.Logf("task %s residual %v", task.File.FilePath(), task.Residual)
	}
	n := 0
	if err := iceberg.ReadFileRows(ctx, loaded, filtered, false, func(r iceberg.Row) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	_, _, ferr := iceberg.ReadFilesCoverage(ctx, loaded, "lake", filtered)
	t.Logf("ReadFileRows saw %d rows of %d files; ReadFilesCoverage: %v", n, len(filtered), ferr)
	if n != 3 {
		t.Errorf("ReadFileRows read %d rows of the files, which hold 3", n)
	}
}
