package queries

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/scale"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/recovery"
)

// Peak heap limits of the scale scenario's readers, as docs/scale.md states
// them; the benchmark fails past one.
const (
	scaleResumePeakLimit = 64 << 20  // Resume of one (topic, partition)
	scaleReadPeakLimit   = 1 << 30   // a full read, Plan, each query
	scaleCheckpointLimit = 256 << 20 // a checkpoint of 10,000 destinations
)

// scaleFigure is one line of BenchmarkScale's table.
type scaleFigure struct {
	what       string
	took       time.Duration
	peak       uint64
	baseline   string
	ratio      float64
	target     string
	peakLimit  uint64
	metricName string
}

// BenchmarkScale builds scale.Full (100 topics x 20 partitions x 5 sinks =
// 10,000 destinations, 100 gaps each: a million ranges appended by 1,000
// checkpoints from 4 writers, then compacted) and measures its readers and
// a checkpoint, each beside a baseline from the same run, with the peak of
// the Go heap each took (readers: the median of three runs):
//
//	go test ./queries -run '^$' -bench Scale -benchtime 1x -v
func BenchmarkScale(b *testing.B) {
	cfg := scale.Full
	tbl := tabletest.EmbeddedTable(b)
	start := time.Now()
	res, err := scale.Build(ctx, tbl, cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("built %d destinations, %d rows in %d checkpoints from %d writers, compacted to %d rows, in %s",
		len(cfg.Destinations()), cfg.Rows(), cfg.Checkpoints, cfg.Writers, res.RowsWritten, time.Since(start).Round(time.Millisecond))
	sinks := make([]string, cfg.Sinks)
	for i := range sinks {
		sinks[i] = cfg.Sink(i)
	}
	wantGaps := (cfg.Sinks - 1) * cfg.Topics * cfg.Partitions * cfg.Gaps

	var figures []scaleFigure
	// Each figure is the median of three runs, and the highest peak.
	measure := func(fn func() error) (time.Duration, uint64) {
		b.Helper()
		var runs []time.Duration
		var peak uint64
		for range 3 {
			took, p, err := scale.Measure(fn)
			if err != nil {
				b.Fatal(err)
			}
			runs, peak = append(runs, took), max(peak, p)
		}
		slices.Sort(runs)
		return runs[1], peak
	}
	for range b.N {
		figures = figures[:0]
		fullTook, fullPeak := measure(func() error {
			all, err := tbl.Coverage(ctx, durable.Filter{})
			if err == nil && len(all) != len(cfg.Destinations()) {
				err = fmt.Errorf("a full read found %d destinations", len(all))
			}
			return err
		})
		figures = append(figures, scaleFigure{"full-table read", fullTook, fullPeak, "", 0, "", scaleReadPeakLimit, "full-read"})

		resumeTook, resumePeak := measure(func() error {
			as, err := recovery.Resume(ctx, tbl, cfg.Topic(42%cfg.Topics), 7%int32(cfg.Partitions), recovery.ResumeOptions{Sinks: sinks})
			if err == nil && len(as) != cfg.Sinks {
				err = fmt.Errorf("resume gave %d assignments", len(as))
			}
			return err
		})
		figures = append(figures, scaleFigure{"Resume of one (topic, partition)", resumeTook, resumePeak, "full-table read",
			resumeTook.Seconds() / fullTook.Seconds(), "<= 0.1", scaleResumePeakLimit, "resume"})

		planTook, planPeak := measure(func() error {
			tasks, err := recovery.Plan(ctx, tbl, recovery.PlanOptions{MaxTasks: -1})
			if err == nil && len(tasks) != wantGaps {
				err = fmt.Errorf("plan gave %d tasks, want %d", len(tasks), wantGaps)
			}
			return err
		})
		figures = append(figures, scaleFigure{"Plan over everything", planTook, planPeak, "full-table read",
			planTook.Seconds() / fullTook.Seconds(), "", scaleReadPeakLimit, "plan"})

		query := func(name string, want int) func() error {
			return func() error {
				db, err := Open(ctx, tbl, Options{Binding: ReadParquet})
				if err != nil {
					return err
				}
				defer db.Close()
				res, err := db.Run(ctx, name, Params{})
				if err == nil && len(res.Rows) != want {
					err = fmt.Errorf("%s query gave %d rows, want %d", name, len(res.Rows), want)
				}
				return err
			}
		}
		gapsTook, gapsPeak := measure(query("gaps", wantGaps))
		figures = append(figures, scaleFigure{"gaps query (DuckDB)", gapsTook, gapsPeak, "Plan (iceberg-go scan, Go fold)",
			gapsTook.Seconds() / planTook.Seconds(), "<= 1.0", scaleReadPeakLimit, "gaps-query"})
		sumTook, sumPeak := measure(query("summary", cfg.Sinks))
		figures = append(figures, scaleFigure{"summary query (DuckDB)", sumTook, sumPeak, "Plan (iceberg-go scan, Go fold)",
			sumTook.Seconds() / planTook.Seconds(), "", scaleReadPeakLimit, "summary-query"})

		figures = append(figures, checkpointVsAppend(b, tbl, cfg)...)
		b.Logf("%-36s %10s %9s  %-34s %7s  %s", "what", "took", "peak MiB", "beside", "ratio", "target")
		for _, f := range figures {
			ratio := ""
			if f.baseline != "" {
				ratio = fmt.Sprintf("%.3f", f.ratio)
				b.ReportMetric(f.ratio, f.metricName+"-ratio")
			}
			b.Logf("%-36s %10s %9.1f  %-34s %7s  %s", f.what, f.took.Round(100*time.Microsecond), float64(f.peak)/(1<<20), f.baseline, ratio, f.target)
			b.ReportMetric(float64(f.took.Microseconds())/1000, f.metricName+"-ms")
			b.ReportMetric(float64(f.peak)/(1<<20), f.metricName+"-peak-MiB")
			if f.peakLimit > 0 && f.peak > f.peakLimit {
				b.Errorf("%s peaked at %.1f MiB of heap, past its limit of %d MiB", f.what, float64(f.peak)/(1<<20), f.peakLimit>>20)
			}
		}
	}
}

// checkpointVsAppend records one new range for each of the scenario's
// destinations in a pod's local tier and times the checkpoint that carries
// them into tbl (the second such round: a pod's steady state), beside a raw iceberg-go append of the same rows to a table
// of the same schema in the same catalog.
func checkpointVsAppend(b *testing.B, tbl *iceberg.Table, cfg scale.Config) []scaleFigure {
	b.Helper()
	store, err := local.Open(local.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	m, err := mirror.New(mirror.Options{Local: store, Durable: tbl, Writer: "bench-pod", ExpireEvery: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	baseline, err := iceberg.Open(ctx, tbl.Catalog(), iceberg.Options{Name: "baseline"})
	if err != nil {
		b.Fatal(err)
	}
	raw, err := baseline.Load(ctx)
	if err != nil {
		b.Fatal(err)
	}
	// Two rounds: the first meets every destination for the first time (as
	// a pod does once after it starts); the second, measured, is a pod's
	// steady state. The baseline appends twice too.
	dests := cfg.Destinations()
	var ckptTook, rawTook time.Duration
	var ckptPeak, rawPeak uint64
	for round := range 2 {
		rows := make([]coverage.DestinationRanges, len(dests))
		for i, d := range dests {
			start := uint64(cfg.Gaps)*10 + uint64(round)*10
			r := coverage.Range{Start: start, End: start + 5}
			rows[i] = coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{r}}
			if err := m.Record(ctx, d, r); err != nil {
				b.Fatal(err)
			}
		}
		// On a pod the records reach Pebble within the local tier's
		// CommitDelay, long before the next checkpoint: their write is
		// Record's cost.
		time.Sleep(10 * time.Millisecond)
		ckptTook, ckptPeak, err = scale.Measure(func() error { return m.Sync(ctx) })
		if err != nil {
			b.Fatal(err)
		}
		rawTook, rawPeak, err = scale.Measure(func() error {
			raw, err = scale.RawAppend(ctx, raw, rows)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	what := fmt.Sprintf("checkpoint of %d destinations", len(dests))
	return []scaleFigure{
		{what, ckptTook, ckptPeak, "raw iceberg-go append", ckptTook.Seconds() / rawTook.Seconds(), "", scaleCheckpointLimit, "checkpoint"},
		{"raw iceberg-go append of the same rows", rawTook, rawPeak, "", 0, "", 0, "raw-append"},
	}
}
