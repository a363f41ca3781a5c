package iceberg

import (
	"context"
	"fmt"
	"testing"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/faultio"
)

// TestFilteredReadSkipsRowGroups writes one checkpoint of 100,000 rows (2
// sinks x 50 topics x 10 partitions x 100 ranges) and reads one (topic,
// partition) back: the rows are the right ones, and the read takes a small
// share of the bytes (under half) a full read takes, because the rows are written in the
// declared sort order in row groups of RowGroupRows, whose statistics let
// the scan skip the others.
func TestFilteredReadSkipsRowGroups(t *testing.T) {
	ctx := context.Background()
	props, err := EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inner, err := OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	inj := faultio.New(1)
	tbl, err := Open(ctx, faultio.WrapCatalog(inner, inj), Options{})
	if err != nil {
		t.Fatal(err)
	}
	meta, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := CoverageSortOrder()
	if got := meta.SortOrder(); !got.Equals(want) {
		t.Fatalf("the table's sort order is %s, want %s", got, want)
	}

	const sinks, topics, partitions, ranges = 2, 50, 10, 100
	c := durable.Checkpoint{Name: "pod/1", Writer: "pod"}
	for s := range sinks {
		for tp := range topics {
			for p := range partitions {
				d := coverage.Destination{Sink: fmt.Sprintf("sink-%d", s), Topic: fmt.Sprintf("topic-%03d", tp), Partition: int32(p)}
				rs := make([]coverage.Range, ranges)
				for i := range rs {
					start := uint64(i*10 + s + tp + p)
					rs[i] = coverage.Range{Start: start, End: start + 5}
				}
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: rs})
			}
		}
	}
	if err := tbl.Append(ctx, c); err != nil {
		t.Fatal(err)
	}

	before := inj.BytesRead("/data/")
	all, err := tbl.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	full := inj.BytesRead("/data/") - before
	if len(all) != sinks*topics*partitions {
		t.Fatalf("a full read found %d destinations, want %d", len(all), sinks*topics*partitions)
	}

	partition := int32(7)
	before = inj.BytesRead("/data/")
	got, err := tbl.Coverage(ctx, durable.Filter{Topic: "topic-017", Partition: &partition})
	if err != nil {
		t.Fatal(err)
	}
	filtered := inj.BytesRead("/data/") - before
	if len(got) != sinks {
		t.Fatalf("the filtered read found %d destinations (%v), want %d", len(got), got, sinks)
	}
	for _, dr := range c.Ranges {
		if dr.Destination.Topic != "topic-017" || dr.Destination.Partition != partition {
			continue
		}
		set, err := coverage.NewRangeSet(dr.Ranges...)
		if err != nil {
			t.Fatal(err)
		}
		if g := got[dr.Destination]; g == nil || !g.Equal(&set) {
			t.Fatalf("%s read back as %v, want %v", dr.Destination, g, set.String())
		}
	}
	t.Logf("bytes of data files read: full %d, one (topic, partition) %d (%.3f)", full, filtered, float64(filtered)/float64(full))
	// Each sink's file holds 50,000 rows, 13 row groups: the filtered read
	// takes one group's columns and the footers (1.0 when the whole file
	// was one row group).
	if full == 0 || filtered*2 > full {
		t.Fatalf("the filtered read took %d of the %d bytes a full read took: more than half, so row groups were not skipped", filtered, full)
	}

	// A rewrite (compaction's) writes sink-0's rows, sorted, in files of
	// CompactedFileRows: planning the same read keeps one of them, by the
	// topic bounds in the manifest, and the rows read back the same.
	base, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := DataFiles(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	rewrite := durable.Checkpoint{Name: "compaction/1", Writer: "compaction"}
	for _, dr := range c.Ranges {
		if dr.Destination.Sink == "sink-0" {
			rewrite.Ranges = append(rewrite.Ranges, dr)
		}
	}
	for _, task := range tasks {
		if s, _ := SinkOf(task.File); s == "sink-0" {
			written, err := tbl.Rewrite(ctx, base, []ice.DataFile{task.File}, rewrite, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := (int(rewrite.Rows()) + CompactedFileRows - 1) / CompactedFileRows; len(written) != want {
				t.Fatalf("the rewrite of %d rows wrote %d files, want %d", rewrite.Rows(), len(written), want)
			}
		}
	}
	after, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	planned, err := after.Scan(table.WithRowFilter(filterExpr(durable.Filter{Sink: "sink-0", Topic: "topic-017", Partition: &partition}))).PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(planned) != 1 {
		t.Fatalf("a read of sink-0, topic-017, partition 7 plans %d files, want 1", len(planned))
	}
	again, err := tbl.Coverage(ctx, durable.Filter{Topic: "topic-017", Partition: &partition})
	if err != nil {
		t.Fatal(err)
	}
	for d, set := range got {
		if g := again[d]; g == nil || !g.Equal(set) {
			t.Fatalf("after the rewrite %s read back as %v, want %s", d, g, set.String())
		}
	}
}
