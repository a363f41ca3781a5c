package compaction

import (
	"fmt"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// Recorded times on a layout built to merge heavily (the random test
// rarely merges): an adjacent chain, a row inside a merged range, a row
// whose start equals the merged start, a duplicate row, rows in many
// files, a second compaction over compacted rows. Each merged row's time
// must be the latest of its inputs, and the coverage must not change.
func TestCompactionTimesUnderHeavyMerges(t *testing.T) {
	tbl := openTable(t)
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	other := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 1}
	n := 0
	add := func(rs ...coverage.Range) {
		t.Helper()
		n++
		c := durable.Checkpoint{Name: fmt.Sprintf("c%d", n), Writer: "w", Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: rs}}}
		if n%2 == 0 { // interleave another destination in the same files
			c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: other, Ranges: []coverage.Range{{Start: uint64(n * 10), End: uint64(n*10 + 5)}}})
		}
		if err := tbl.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	check := func(stage string) {
		t.Helper()
		rows := stampedRows(t, tbl)
		_, want := tabletest.LatestByBruteForce(rows)
		before := coverageOf(t, tbl)
		if _, err := Compact(ctx, tbl, Options{MinSmallFiles: 1}); err != nil {
			t.Fatalf("%s: %v", stage, err)
		}
		sameCoverage(t, stage, coverageOf(t, tbl), before)
		after := stampedRows(t, tbl)
		total := 0
		for _, m := range want {
			total += len(m)
		}
		if len(after) != total {
			t.Fatalf("%s: %d rows after, want %d", stage, len(after), total)
		}
		for _, r := range after {
			if at, ok := want[r.Destination][r.Range]; !ok || !r.RecordedAt.Equal(at) {
				t.Errorf("%s: %s %s at %s, want %s (%v)", stage, r.Destination, r.Range, r.RecordedAt, at, ok)
			}
		}
	}
	add(coverage.Range{Start: 10, End: 20}, coverage.Range{Start: 40, End: 50})
	add(coverage.Range{Start: 0, End: 5})
	add(coverage.Range{Start: 5, End: 10})  // chain 0..20
	add(coverage.Range{Start: 12, End: 14}) // inside
	add(coverage.Range{Start: 0, End: 1})   // start equals the merged start
	add(coverage.Range{Start: 40, End: 50}) // duplicate
	add(coverage.Range{Start: 60, End: 61}) // alone
	add(coverage.Range{Start: 20, End: 40}) // bridges 0..20 and 40..50
	check("first compaction")
	add(coverage.Range{Start: 50, End: 60}) // joins the compacted row and 60..61
	add(coverage.Range{Start: 100, End: 200})
	add(coverage.Range{Start: 99, End: 100}) // start below a compacted row's start
	check("second compaction")
}
