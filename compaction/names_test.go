package compaction

import (
	"fmt"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// Compaction on tables covmirror wrote itself, with sink names whose keys
// are hashed (> 96 encoded bytes), share a hashed prefix, or sit at the
// hashing boundary: it must succeed and keep coverage.
func TestCompactionHostileAndLongSinkNames(t *testing.T) {
	names := []string{"..", "../x", "~7E", "a~~b", " spaced ", "ünïcødé/名前", "x\u202ey",
		strings.Repeat("é", 512), strings.Repeat("/..", 341),
		strings.Repeat("a", 96), strings.Repeat("a", 97), strings.Repeat("a", 98), strings.Repeat("a", 99), strings.Repeat("a", 1024),
		strings.Repeat("b", 70) + "x", strings.Repeat("b", 70) + "y", // same readable prefix, hashed
		strings.Repeat("c", 63) + "/" + strings.Repeat("d", 40), // a ~XX unit at the cut
		strings.Repeat("c", 62) + "/" + strings.Repeat("d", 40),
		strings.Repeat("c", 61) + "/" + strings.Repeat("d", 40),
	}
	tbl := openTable(t)
	for round := range 3 {
		var c durable.Checkpoint
		c.Name, c.Writer = fmt.Sprintf("c%d", round), "pod"
		for i, n := range names {
			d := coverage.Destination{Sink: n, Topic: "t", Partition: int32(i)}
			if err := d.Validate(); err != nil {
				t.Fatalf("%q: %v", n, err)
			}
			c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: uint64(round * 10), End: uint64(round*10 + 5)}}})
		}
		if err := tbl.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	before := coverageOf(t, tbl)
	res, err := Compact(ctx, tbl, Options{MinSmallFiles: 1})
	if err != nil {
		t.Fatalf("compaction: %v", err)
	}
	t.Logf("%+v", res)
	if res.Sinks != len(names) {
		t.Errorf("compacted %d sinks, want %d", res.Sinks, len(names))
	}
	sameCoverage(t, "after", coverageOf(t, tbl), before)
	if _, err := Compact(ctx, tbl, Options{MinSmallFiles: 1}); err != nil {
		t.Fatalf("second compaction: %v", err)
	}
	sameCoverage(t, "after 2", coverageOf(t, tbl), before)
}
