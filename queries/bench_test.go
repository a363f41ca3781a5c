package queries

import (
	"fmt"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/recovery"
)

// BenchmarkGapsQuery times the gaps query over a table whose lake sink
// holds N ranges (a hole after every one) against raw's one range, through
// DuckDB's read_parquet of the snapshot's files, and, in the same run,
// through an iceberg-go scan with the gaps computed in Go (what the planner
// does). Both include loading the table's metadata. It reports both and
// their ratio (DuckDB over Go; below 1 means DuckDB is faster):
//
//	go test ./queries -run '^$' -bench GapsQuery -benchtime 3x
func BenchmarkGapsQuery(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("ranges=%d", n), func(b *testing.B) {
			tbl := openTable(b)
			lake := coverage.DestinationRanges{Destination: coverage.Destination{Sink: "lake", Topic: "orders"}}
			for i := range n {
				lake.Ranges = append(lake.Ranges, coverage.Range{Start: uint64(i) * 3, End: uint64(i)*3 + 2})
			}
			raw := coverage.DestinationRanges{Destination: coverage.Destination{Sink: "raw", Topic: "orders"},
				Ranges: []coverage.Range{{Start: 0, End: uint64(n) * 3}}}
			if err := tbl.Append(ctx, durable.Checkpoint{Name: "bench/1", Writer: "bench", Ranges: []coverage.DestinationRanges{raw, lake}}); err != nil {
				b.Fatal(err)
			}
			var duck, scan time.Duration
			for range b.N {
				start := time.Now()
				db, err := Open(ctx, tbl, Options{Binding: ReadParquet})
				if err != nil {
					b.Fatal(err)
				}
				res, err := db.Run(ctx, "gaps", Params{})
				if err != nil {
					b.Fatal(err)
				}
				_ = db.Close()
				duck += time.Since(start)
				if len(res.Rows) != n {
					b.Fatalf("DuckDB found %d gaps, want %d", len(res.Rows), n)
				}

				start = time.Now()
				tasks, err := recovery.Plan(ctx, tbl, recovery.PlanOptions{MaxBatches: 1 << 62, MaxTasks: -1})
				if err != nil {
					b.Fatal(err)
				}
				scan += time.Since(start)
				if len(tasks) != n {
					b.Fatalf("Go found %d gaps, want %d", len(tasks), n)
				}
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(ms(duck), "read_parquet-ms")
			b.ReportMetric(ms(scan), "iceberg-go-scan-ms")
			b.ReportMetric(duck.Seconds()/scan.Seconds(), "ratio")
		})
	}
}
