package queries

import (
	"fmt"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/scale"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/recovery"
)

// TestScaleScenario builds the small scale scenario (many checkpoints from
// several writers, then compacted) and checks every reader of the scale
// benchmark against what the scenario holds: Resume of each partition,
// Plan over everything, the gaps and summary queries.
func TestScaleScenario(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: the scale scenario; make test-slow runs it")
	}
	cfg := scale.Small
	tbl := tabletest.EmbeddedTable(t)
	res, err := scale.Build(ctx, tbl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sinks != cfg.Sinks || res.RowsRead != int64(cfg.Rows()) {
		t.Fatalf("compaction rewrote %d sinks from %d rows; want %d sinks from %d rows", res.Sinks, res.RowsRead, cfg.Sinks, cfg.Rows())
	}
	sinks := make([]string, cfg.Sinks)
	for i := range sinks {
		sinks[i] = cfg.Sink(i)
	}
	wantGaps := 0
	for _, d := range cfg.Destinations() {
		wantGaps += len(cfg.GapsOf(d))
	}

	for tp := range cfg.Topics {
		for p := range int32(cfg.Partitions) {
			as, err := recovery.Resume(ctx, tbl, cfg.Topic(tp), p, recovery.ResumeOptions{Sinks: sinks})
			if err != nil {
				t.Fatal(err)
			}
			for _, a := range as {
				want := cfg.Covered(a.Destination)
				if got, _ := coverage.NewRangeSet(a.Covered...); !got.Equal(&want) {
					t.Fatalf("resume %s: covered %v, want %v", a.Destination, got.String(), want.String())
				}
				if fmt.Sprint(a.Replay) != fmt.Sprint(cfg.GapsOf(a.Destination)) {
					t.Fatalf("resume %s: replay %v, want %v", a.Destination, a.Replay, cfg.GapsOf(a.Destination))
				}
			}
		}
	}

	tasks, err := recovery.Plan(ctx, tbl, recovery.PlanOptions{MaxTasks: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != wantGaps {
		t.Fatalf("plan: %d tasks, want %d", len(tasks), wantGaps)
	}
	for _, task := range tasks {
		if task.Range.Len() != 1 || task.Range.Start%10 != 9 || task.Destination.Sink == coverage.RawSink {
			t.Fatalf("plan: task %v is not one of the scenario's gaps", task)
		}
	}

	db, err := Open(ctx, tbl, Options{Binding: ReadParquet})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	gaps, err := db.Run(ctx, "gaps", Params{})
	if err != nil {
		t.Fatal(err)
	}
	if len(gaps.Rows) != wantGaps {
		t.Fatalf("gaps query: %d rows, want %d", len(gaps.Rows), wantGaps)
	}
	sum, err := db.Run(ctx, "summary", Params{})
	if err != nil {
		t.Fatal(err)
	}
	perSink := wantGaps / (cfg.Sinks - 1)
	for _, row := range sum.Rows {
		sink, gapsOf := fmt.Sprint(row[0]), fmt.Sprint(row[3])
		want := fmt.Sprint(perSink)
		if sink == coverage.RawSink {
			want = "0"
		}
		if gapsOf != want {
			t.Fatalf("summary: sink %s has %s gaps, want %s", sink, gapsOf, want)
		}
	}
	if len(sum.Rows) != cfg.Sinks {
		t.Fatalf("summary: %d rows, want one per sink (%d)", len(sum.Rows), cfg.Sinks)
	}
}
