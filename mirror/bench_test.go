package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/scale"
)

// BenchmarkCheckpointVsAppend times a checkpoint of D pending ranges (Sync:
// local bookkeeping, data files, commit, marking; the records themselves
// already written to Pebble) and, in the same run, a
// raw iceberg-go append of the same rows to a table of the same schema in
// the same catalog, and reports both and their ratio:
//
//	go test ./mirror -run '^$' -bench CheckpointVsAppend -benchtime 100x
func BenchmarkCheckpointVsAppend(b *testing.B) {
	for _, d := range []int{1, 1000, 100_000} {
		b.Run(fmt.Sprintf("D=%d", d), func(b *testing.B) {
			e := newBenchEnv(b)
			m := e.benchOwner(b)
			defer m.Close()
			raw := e.rawTable(b)
			var ckptTime, rawTime time.Duration
			for i := range b.N {
				base := uint64(i) * uint64(d) * 4
				dest := coverage.Destination{Sink: "lake", Topic: "orders"}
				ranges := make([]coverage.Range, d)
				for j := range ranges {
					start := base + uint64(j)*2 // never adjacent: D rows
					ranges[j] = coverage.Range{Start: start, End: start + 1}
					if err := m.Record(ctx, dest, ranges[j]); err != nil {
						b.Fatal(err)
					}
				}
				// On a pod the records reach Pebble within the local tier's
				// CommitDelay (2 ms), long before the next checkpoint: their
				// write is Record's cost (local's benchmark), not Sync's.
				time.Sleep(10 * time.Millisecond)
				start := time.Now()
				if err := m.Sync(ctx); err != nil {
					b.Fatal(err)
				}
				ckptTime += time.Since(start)

				// The baseline starts from the same ranges: laying them out
				// as arrow rows is part of any append.
				start = time.Now()
				next, err := scale.RawAppend(ctx, raw, []coverage.DestinationRanges{{Destination: dest, Ranges: ranges}})
				if err != nil {
					b.Fatal(err)
				}
				rawTime += time.Since(start)
				raw = next
			}
			per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(per(ckptTime), "checkpoint-ms")
			b.ReportMetric(per(rawTime), "raw-append-ms")
			b.ReportMetric(ckptTime.Seconds()/rawTime.Seconds(), "ratio")
		})
	}
}

// BenchmarkCommitLatencyOverTime makes 1,010 one-range checkpoints on one
// table, as a pod does, with the Mirror's snapshot expiry (every 20
// checkpoints, keeping 20 snapshots; the age limit is lowered since the run
// is shorter than the default 15 minutes) and a scheduled compaction job
// every 100 checkpoints (after the 100th, 200th, ... 1,000th). It reports the
// mean latency of checkpoints 1-10 and of checkpoints 1,001-1,010 (the same
// point of the compaction cycle) and their ratio, and the mean of
// checkpoints 991-1,000, the peak of a cycle, when 100 small files wait for
// the compaction:
//
//	go test ./mirror -run '^$' -bench CommitLatencyOverTime -benchtime 1x
func BenchmarkCommitLatencyOverTime(b *testing.B) {
	const n, window, compactEvery = 1010, 10, 100
	e := newBenchEnv(b)
	m := e.benchOwner(b)
	defer m.Close()
	m.opts.ExpireEvery = 20
	m.opts.Expire = durable.ExpireOptions{OlderThan: time.Millisecond, RetainLast: 20}
	var first, last, peak time.Duration
	for range b.N {
		for i := range n {
			if err := m.Record(ctx, coverage.Destination{Sink: "lake", Topic: "orders"}, coverage.Range{Start: uint64(i) * 2, End: uint64(i)*2 + 1}); err != nil {
				b.Fatal(err)
			}
			start := time.Now()
			if err := m.Sync(ctx); err != nil {
				b.Fatal(err)
			}
			took := time.Since(start)
			switch {
			case i < window:
				first += took
			case i >= n-window:
				last += took
			case i >= n-2*window:
				peak += took
			}
			if i%compactEvery == compactEvery-1 {
				if _, err := compaction.Compact(ctx, e.table, compaction.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(window*b.N) }
	b.ReportMetric(ms(first), "first10-ms")
	b.ReportMetric(ms(last), "last10-ms")
	b.ReportMetric(ms(peak), "cycle-peak-ms")
	b.ReportMetric(last.Seconds()/first.Seconds(), "ratio")
}

type benchEnv struct {
	cat   catalog.Catalog
	table *iceberg.Table
	dir   string
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	props, err := iceberg.EmbeddedProps(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	cat, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		b.Fatal(err)
	}
	tbl, err := iceberg.Open(ctx, cat, iceberg.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return &benchEnv{cat: cat, table: tbl, dir: b.TempDir()}
}

func (e *benchEnv) benchOwner(b *testing.B) *Mirror {
	b.Helper()
	return (&env{table: e.table}).owner(b, "", "bench")
}

// rawTable is a second table of the coverage schema, written with plain
// iceberg-go appends as the baseline.
func (e *benchEnv) rawTable(b *testing.B) *table.Table {
	b.Helper()
	raw, err := iceberg.Open(ctx, e.cat, iceberg.Options{Name: "baseline"})
	if err != nil {
		b.Fatal(err)
	}
	tbl, err := raw.Load(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return tbl
}
