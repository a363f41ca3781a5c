package compaction

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
)

// BenchmarkCompactionScenario: 1,000 one-row checkpoints over 10
// destinations (5 sinks, 2 partitions), then compaction and maintenance.
// Reports data files, bytes and the time of a gap query (read the table,
// compute every sink's gaps against raw) before and after, and the files
// under the table location before and after maintenance:
//
//	go test ./compaction -run '^$' -bench CompactionScenario -benchtime 1x
func BenchmarkCompactionScenario(b *testing.B) {
	for range b.N {
		_, tbl := embeddedTable(b)
		sinks := []string{"raw", "lake", "search", "warehouse", "archive"}
		var firstCommit time.Duration
		for i := range 1000 {
			d := coverage.Destination{Sink: sinks[i%5], Topic: "orders", Partition: int32(i / 5 % 2)}
			first := uint64(i/10) * 3
			c := durable.Checkpoint{Name: fmt.Sprintf("c/%d", i), Writer: "bench",
				Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: first, End: first + 2}}}}}
			start := time.Now()
			if err := tbl.Append(ctx, c); err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				firstCommit = time.Since(start)
			}
		}
		filesBefore, bytesBefore := tableFiles(b, tbl)
		onDiskBefore := filesUnder(b, tbl)
		queryBefore := gapQuery(b, tbl)
		if _, err := Compact(ctx, tbl, Options{}); err != nil {
			b.Fatal(err)
		}
		queryAfter := gapQuery(b, tbl)
		filesAfter, bytesAfter := tableFiles(b, tbl)
		if filesAfter > len(sinks) {
			b.Fatalf("%d data files after compaction, want at most one per sink (%d)", filesAfter, len(sinks))
		}
		// Expire everything but the current snapshot; orphans need an hour,
		// so this run only drops expired snapshots' files.
		if _, err := Maintain(ctx, tbl, MaintainOptions{Expire: durable.ExpireOptions{OlderThan: time.Millisecond, RetainLast: 1}}); err != nil {
			b.Fatal(err)
		}
		onDiskAfter := filesUnder(b, tbl)
		start := time.Now()
		if err := tbl.Append(ctx, durable.Checkpoint{Name: "after", Writer: "bench", Ranges: []coverage.DestinationRanges{{
			Destination: coverage.Destination{Sink: "lake", Topic: "orders"}, Ranges: []coverage.Range{{Start: 9000, End: 9001}}}}}); err != nil {
			b.Fatal(err)
		}
		afterCommit := time.Since(start)
		b.ReportMetric(float64(firstCommit.Microseconds())/1000, "first-commit-ms")
		b.ReportMetric(float64(afterCommit.Microseconds())/1000, "commit-after-maintenance-ms")
		b.ReportMetric(afterCommit.Seconds()/firstCommit.Seconds(), "commit-ratio")
		b.ReportMetric(float64(filesBefore), "files-before")
		b.ReportMetric(float64(filesAfter), "files-after")
		b.ReportMetric(float64(bytesBefore), "data-bytes-before")
		b.ReportMetric(float64(bytesAfter), "data-bytes-after")
		b.ReportMetric(float64(queryBefore.Microseconds())/1000, "gap-query-ms-before")
		b.ReportMetric(float64(queryAfter.Microseconds())/1000, "gap-query-ms-after")
		b.ReportMetric(float64(onDiskBefore), "files-on-disk-before")
		b.ReportMetric(float64(onDiskAfter), "files-on-disk-after")
	}
}

func tableFiles(b *testing.B, tbl *iceberg.Table) (int, int64) {
	loaded, err := tbl.Load(ctx)
	if err != nil {
		b.Fatal(err)
	}
	tasks, err := loaded.Scan().PlanFiles(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, task := range tasks {
		size += task.File.FileSizeBytes()
	}
	return len(tasks), size
}

func filesUnder(b *testing.B, tbl *iceberg.Table) int {
	loaded, err := tbl.Load(ctx)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	_ = filepath.WalkDir(strings.TrimPrefix(loaded.Location(), "file://"), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// gapQuery is what `covmirror gaps` does: read every row, gaps against raw.
func gapQuery(b *testing.B, tbl *iceberg.Table) time.Duration {
	start := time.Now()
	all, err := tbl.Coverage(ctx, durable.Filter{})
	if err != nil {
		b.Fatal(err)
	}
	for d, set := range all {
		if ref := all[d.WithSink("raw")]; ref != nil && d.Sink != "raw" {
			_ = coverage.Gaps(ref, set)
		}
	}
	return time.Since(start)
}
