package compaction

import (
	"errors"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// A row another engine appended under another sink's key is in a file
// compaction groups with that sink's files: compaction reads every row of
// the files it replaces, so it refuses that row (ErrCorrupt) rather than
// replacing its file without it, and the coverage stays.
func TestCompactionRefusesARowFiledUnderAnotherSink(t *testing.T) {
	tbl := openTable(t)
	lake := coverage.Destination{Sink: "lake", Topic: "orders"}
	for i := range 2 {
		if err := tbl.Append(ctx, durable.Checkpoint{Name: "c" + string(rune('0'+i)), Writer: "pod", Ranges: []coverage.DestinationRanges{
			{Destination: coverage.Destination{Sink: "search", Topic: "orders"}, Ranges: []coverage.Range{{Start: uint64(10 * i), End: uint64(10*i + 10)}}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	// lake's row, filed under search's key.
	row := tabletest.Valid("lake", "orders", 0, 0, 100)
	searchKey := iceberg.PathKey("search")
	row.SinkKey = &searchKey
	if err := tabletest.AppendForeign(t, tbl, row); err != nil {
		t.Fatal(err)
	}
	before := coverageOf(t, tbl)
	if before[lake] == nil {
		t.Fatalf("the full read does not see lake's row: %v", before)
	}
	if _, err := Compact(ctx, tbl, Options{MinSmallFiles: 1}); !errors.Is(err, coverage.ErrCorrupt) {
		t.Errorf("compaction: %v, want ErrCorrupt", err)
	} else {
		t.Log(err)
	}
	after := coverageOf(t, tbl)
	if after[lake] == nil || !after[lake].Equal(before[lake]) {
		t.Errorf("compaction changed lake's coverage: before %v, after %v", before[lake], after[lake])
	}
}

// A sink left as it is for a corrupt row does not hold back the others:
// they are compacted, and the error says which sink was left.
func TestCompactionGoesOnPastACorruptSink(t *testing.T) {
	tbl := openTable(t)
	for i := range 2 {
		if err := tbl.Append(ctx, durable.Checkpoint{Name: "c" + string(rune('0'+i)), Writer: "pod", Ranges: []coverage.DestinationRanges{
			{Destination: coverage.Destination{Sink: "lake", Topic: "orders"}, Ranges: []coverage.Range{{Start: uint64(10 * i), End: uint64(10*i + 10)}}},
			{Destination: coverage.Destination{Sink: "search", Topic: "orders"}, Ranges: []coverage.Range{{Start: uint64(10 * i), End: uint64(10*i + 10)}}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	row := tabletest.Valid("other", "orders", 0, 0, 5)
	lakeKey := iceberg.PathKey("lake")
	row.SinkKey = &lakeKey
	if err := tabletest.AppendForeign(t, tbl, row); err != nil {
		t.Fatal(err)
	}
	res, err := Compact(ctx, tbl, Options{MinSmallFiles: 1})
	if !errors.Is(err, coverage.ErrCorrupt) || res.Corrupt != 1 || res.Sinks != 1 {
		t.Fatalf("Compact: %+v, %v; want lake left (ErrCorrupt) and search compacted", res, err)
	}
	t.Log(err)
}
