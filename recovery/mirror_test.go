package recovery

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// TestRebalance: owner A checkpoints batches 1..100 of three sinks, records
// 101..150 without a checkpoint and dies; owner B, reading only the table,
// must be told to verify raw's 101..150 first and then replay them to the
// sinks, never that they are covered.
func TestRebalance(t *testing.T) {
	e := newEnv(t)
	a := e.Owner(t, "", "pod-a")
	sinks := []string{"lake", "search", "warehouse"}
	all := append([]string{coverage.RawSink}, sinks...)
	for _, sink := range all {
		record(t, a, coverage.Destination{Sink: sink, Topic: "orders", Partition: 4}, 1, 101)
	}
	if err := a.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	for _, sink := range all {
		record(t, a, coverage.Destination{Sink: sink, Topic: "orders", Partition: 4}, 101, 151)
	}
	// A dies here: its local tier goes with the pod and B never reads it.
	// The source had acknowledged through batch 150 (raw was durable), so
	// raw's own coverage of 101..150 is to verify, first.

	got, err := Resume(ctx, e.Table, "orders", 4, ResumeOptions{Sinks: sinks, Extents: []coverage.Extent{{Topic: "orders", Partition: 4, Start: 1, End: 151}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0].Kind != KindVerifyReference || !slices.Equal(got[0].Replay, []coverage.Range{rg(101, 151)}) {
		t.Fatalf("assignments %+v", got)
	}
	// The sinks' share waits for raw's verification: a replay of batches
	// raw is not known to hold could be recorded with nothing written.
	for _, as := range got[1:] {
		if !slices.Equal(as.Covered, []coverage.Range{rg(1, 101)}) || len(as.Replay) != 0 {
			t.Fatalf("%s: covered %v replay %v; want covered [1,101) and no replay before raw is verified", as.Destination, as.Covered, as.Replay)
		}
	}
	// Without the source's position B still never hears 101..150 covered.
	got, _ = Resume(ctx, e.Table, "orders", 4, ResumeOptions{Sinks: sinks})
	for _, as := range got {
		if slices.ContainsFunc(as.Covered, func(r coverage.Range) bool { return r.End > 101 }) {
			t.Fatalf("%s: uncheckpointed batches reported covered: %v", as.Destination, as.Covered)
		}
	}
	// B verifies raw's 101..150 (raw holds them) and records that; then
	// every sink is told to replay them.
	b := e.Owner(t, "", "pod-b")
	record(t, b, coverage.Destination{Sink: coverage.RawSink, Topic: "orders", Partition: 4}, 101, 151)
	if err := b.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	got, err = Resume(ctx, e.Table, "orders", 4, ResumeOptions{Sinks: sinks, Extents: []coverage.Extent{{Topic: "orders", Partition: 4, Start: 1, End: 151}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || len(got[0].Replay) != 0 {
		t.Fatalf("assignments after raw's verification %+v", got)
	}
	for _, as := range got[1:] {
		if !slices.Equal(as.Covered, []coverage.Range{rg(1, 101)}) || !slices.Equal(as.Replay, []coverage.Range{rg(101, 151)}) {
			t.Fatalf("%s: covered %v replay %v; want covered [1,101) and replay [101,151)", as.Destination, as.Covered, as.Replay)
		}
	}
}

// TestRecoveryPlan: a sink that failed 30..40 and 70 while raw covers 1..100
// gets exactly [30,41) and [70,71); after replay and a checkpoint, nothing.
func TestRecoveryPlan(t *testing.T) {
	e := newEnv(t)
	m := e.Owner(t, "", "pod-a")
	defer m.Close()
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders", Partition: 0}
	lake := raw.WithSink("lake")
	record(t, m, raw, 1, 101)
	record(t, m, lake, 1, 30)
	record(t, m, lake, 41, 70)
	record(t, m, lake, 71, 101)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	tasks, err := Plan(ctx, e.Table, PlanOptions{MaxBatches: 8})
	if err != nil {
		t.Fatal(err)
	}
	want := []Task{{lake, rg(30, 38), KindReplay}, {lake, rg(38, 41), KindReplay}, {lake, rg(70, 71), KindReplay}}
	if !slices.Equal(tasks, want) {
		t.Fatalf("plan %v, want %v", tasks, want)
	}
	var replayed []coverage.Range
	done, err := Recover(ctx, tasks, ReplayFunc(func(_ context.Context, task Task) error {
		replayed = append(replayed, task.Range)
		return nil
	}), m)
	if err != nil || done != 3 {
		t.Fatalf("recover: %d done, %v", done, err)
	}
	if tasks, _ := Plan(ctx, e.Table, PlanOptions{}); len(tasks) != 2 {
		t.Fatalf("before the checkpoint the committed plan must still show the gaps, got %v", tasks)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if tasks, err := Plan(ctx, e.Table, PlanOptions{}); err != nil || len(tasks) != 0 {
		t.Fatalf("plan after replay and checkpoint: %v, %v", tasks, err)
	}
}

func TestRecoverStopsAtFailedReplay(t *testing.T) {
	store := coverage.NewInMemory()
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	tasks := []Task{{d, rg(1, 2), KindReplay}, {d, rg(5, 6), KindReplay}, {d, rg(9, 10), KindReplay}}
	done, err := Recover(ctx, tasks, ReplayFunc(func(_ context.Context, task Task) error {
		if task.Range.Start == 5 {
			return errors.New("sink down")
		}
		return nil
	}), store)
	set, _ := store.Covered(ctx, d)
	if done != 1 || err == nil || !strings.Contains(err.Error(), "sink down") || set.String() != "{[1,2)}" {
		t.Fatalf("done %d, err %v, covered %v", done, err, set.String())
	}
}
