package recovery

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/testseed"
)

// modelRow is a row as the gap metrics once kept them, per partition sorted
// by start.
type modelRow struct {
	sink       string
	start, end uint64
	at         time.Time
}

// modelSince is the gap metrics' former dating, kept as the reference
// model and the benchmark's baseline: for every gap it scans the
// partition's rows from the start, quadratic in a partition's gaps. It
// returns now where no row shows the gap.
func modelSince(rows []modelRow, task Task, reference string, now time.Time) time.Time {
	s, e := task.Range.Start, task.Range.End
	if task.Kind == KindVerifyReference {
		below, above := now, now
		for _, r := range rows {
			if r.start < e && r.at.Before(below) {
				below = r.at
			}
			if r.end > s && r.at.Before(above) {
				above = r.at
			}
		}
		if below.After(above) {
			return below
		}
		return above
	}
	since := now
	for _, r := range rows {
		if r.start >= e {
			break
		}
		if r.sink == reference && r.end > s && r.at.Before(since) {
			since = r.at
		}
	}
	return since
}

func sortModelRows(rows map[TopicPartition][]modelRow) {
	for _, rs := range rows {
		slices.SortFunc(rs, func(a, b modelRow) int { return cmp.Compare(a.start, b.start) })
	}
}

// TestDatingMatchesModel dates randomized histories (rows of raw and two
// sinks on two partitions, overlapping, with repeated times) and checks
// every planned gap, and arbitrary ranges of both kinds, against the model.
func TestDatingMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 0))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := base.Add(1000 * time.Hour)
	for round := range 200 {
		dating := NewDating(coverage.RawSink)
		rows := map[TopicPartition][]modelRow{}
		all := map[coverage.Destination]*coverage.RangeSet{}
		span := uint64(5 + rng.IntN(200))
		for range rng.IntN(60) {
			d := coverage.Destination{Sink: []string{coverage.RawSink, "lake", "search"}[rng.IntN(3)], Topic: "t", Partition: int32(rng.IntN(2))}
			start := rng.Uint64N(span)
			r := coverage.Range{Start: start, End: start + 1 + rng.Uint64N(10)}
			at := base.Add(time.Duration(rng.IntN(20)) * time.Hour)
			if err := dating.Add(d, r, at); err != nil {
				t.Fatal(err)
			}
			tp := TopicPartition{Topic: d.Topic, Partition: d.Partition}
			rows[tp] = append(rows[tp], modelRow{d.Sink, r.Start, r.End, at})
			if all[d] == nil {
				all[d] = new(coverage.RangeSet)
			}
			if err := all[d].Add(r); err != nil {
				t.Fatal(err)
			}
		}
		sortModelRows(rows)
		var tasks []Task
		if slices.ContainsFunc(slices.Collect(maps.Keys(all)), func(d coverage.Destination) bool { return d.Sink == coverage.RawSink }) {
			planned, err := PlanCoverage(all, PlanOptions{Reference: coverage.RawSink})
			if err != nil {
				t.Fatal(err)
			}
			tasks = planned
		}
		for range 20 {
			start := rng.Uint64N(span + 10)
			kind := []TaskKind{KindReplay, KindVerifyReference}[rng.IntN(2)]
			sink := "lake"
			if kind == KindVerifyReference {
				sink = coverage.RawSink
			}
			tasks = append(tasks, Task{Destination: coverage.Destination{Sink: sink, Topic: "t", Partition: int32(rng.IntN(3))},
				Range: coverage.Range{Start: start, End: start + 1 + rng.Uint64N(20)}, Kind: kind})
		}
		for _, task := range tasks {
			want := modelSince(rows[TopicPartition{Topic: task.Destination.Topic, Partition: task.Destination.Partition}], task, coverage.RawSink, now)
			got, ok := dating.Since(task)
			if !ok {
				got = now
			}
			if !got.Equal(want) {
				t.Fatalf("round %d: %s %s %s: since %v (shown %v), want %v", round, task.Kind, task.Destination, task.Range, got, ok, want)
			}
		}
	}
}

// TestDatingAddAfterSince: a row added after a Since is seen by the next.
func TestDatingAddAfterSince(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := coverage.Destination{Sink: coverage.RawSink, Topic: "t", Partition: 0}
	dating := NewDating(coverage.RawSink)
	task := Task{Destination: d.WithSink("lake"), Range: coverage.Range{Start: 5, End: 6}, Kind: KindReplay}
	if err := dating.Add(d, coverage.Range{Start: 10, End: 20}, base); err != nil {
		t.Fatal(err)
	}
	if at, ok := dating.Since(task); ok {
		t.Fatalf("no reference row over [5,6) yet, dated %v", at)
	}
	if err := dating.Add(d, coverage.Range{Start: 0, End: 10}, base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if at, ok := dating.Since(task); !ok || !at.Equal(base.Add(time.Hour)) {
		t.Fatalf("dated %v (%v), want %v", at, ok, base.Add(time.Hour))
	}
	if err := dating.Add(d, coverage.Range{Start: 3, End: 3}, base); err == nil {
		t.Fatal("an empty range was accepted")
	}
}

// gapHistory is one partition with gaps gaps: raw rows of ten batches each,
// one per checkpoint, and a sink missing the last batch of each; every
// eighth raw row is lost (a hole of raw the sink covers). The tasks are the
// plan's, one per gap.
func gapHistory(tb testing.TB, gaps int) ([]coverage.DestinationRanges, []time.Time, []Task) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders", Partition: 0}
	lake := raw.WithSink("lake")
	var rows []coverage.DestinationRanges
	var times []time.Time
	all := map[coverage.Destination]*coverage.RangeSet{raw: new(coverage.RangeSet), lake: new(coverage.RangeSet)}
	for i := range uint64(gaps) {
		at := base.Add(time.Duration(i) * time.Second)
		add := func(d coverage.Destination, r coverage.Range) {
			rows = append(rows, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{r}})
			times = append(times, at)
			if err := all[d].Add(r); err != nil {
				tb.Fatal(err)
			}
		}
		if i%8 != 7 {
			add(raw, coverage.Range{Start: 10 * i, End: 10*i + 10})
		}
		add(lake, coverage.Range{Start: 10 * i, End: 10*i + 9})
	}
	tasks, err := PlanCoverage(all, PlanOptions{Reference: coverage.RawSink})
	if err != nil {
		tb.Fatal(err)
	}
	return rows, times, tasks
}

// BenchmarkGapDating dates every gap of one partition with 10,000 and
// 80,000 gaps, the former quadratic way (the model) as the baseline in the
// same iteration, and reports both and their ratio:
//
//	go test ./recovery -run '^$' -bench GapDating -benchtime 1x
func BenchmarkGapDating(b *testing.B) {
	for _, gaps := range []int{10_000, 80_000} {
		b.Run(fmt.Sprintf("gaps=%d", gaps), func(b *testing.B) {
			rows, times, tasks := gapHistory(b, gaps)
			now := time.Now()
			var newTime, oldTime time.Duration
			for range b.N {
				start := time.Now()
				dating := NewDating(coverage.RawSink)
				for i, dr := range rows {
					_ = dating.Add(dr.Destination, dr.Ranges[0], times[i])
				}
				dated := 0
				for _, task := range tasks {
					if _, ok := dating.Since(task); ok {
						dated++
					}
				}
				newTime += time.Since(start)

				start = time.Now()
				model := map[TopicPartition][]modelRow{}
				for i, dr := range rows {
					tp := TopicPartition{Topic: dr.Destination.Topic, Partition: dr.Destination.Partition}
					model[tp] = append(model[tp], modelRow{dr.Destination.Sink, dr.Ranges[0].Start, dr.Ranges[0].End, times[i]})
				}
				sortModelRows(model)
				modelDated := 0
				for _, task := range tasks {
					if !modelSince(model[TopicPartition{Topic: task.Destination.Topic, Partition: task.Destination.Partition}], task, coverage.RawSink, now).Equal(now) {
						modelDated++
					}
				}
				oldTime += time.Since(start)
				if dated != modelDated || dated != len(tasks) {
					b.Fatalf("dated %d of %d gaps, the model %d", dated, len(tasks), modelDated)
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(len(tasks)), "gaps")
			b.ReportMetric(newTime.Seconds()/n, "dating-s/op")
			b.ReportMetric(oldTime.Seconds()/n, "quadratic-s/op")
			b.ReportMetric(oldTime.Seconds()/newTime.Seconds(), "speedup")
		})
	}
}
