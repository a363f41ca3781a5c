package reconcile_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/reconcile"
	"github.com/covmirror/covmirror/recovery"
)

// holdsAll is a sink that holds everything it is asked about.
type holdsAll struct{ calls int }

func (h *holdsAll) Held(_ context.Context, _ coverage.Destination, rs []coverage.Range) (*coverage.RangeSet, error) {
	h.calls++
	s, err := coverage.NewRangeSet(rs...)
	return &s, err
}

// reaches answers one batch past what it was asked.
type reaches struct{}

func (reaches) Held(_ context.Context, _ coverage.Destination, rs []coverage.Range) (*coverage.RangeSet, error) {
	s, err := coverage.NewRangeSet(coverage.Range{Start: rs[0].Start, End: rs[len(rs)-1].End + 1})
	return &s, err
}

// counts counts everything but batch 3.
type counts struct{}

func (counts) Count(_ context.Context, _ coverage.Destination, r coverage.Range) (uint64, error) {
	if r.Contains(3) {
		return r.Len() - 1, nil
	}
	return r.Len(), nil
}

func TestOptionsValidate(t *testing.T) {
	for _, o := range []reconcile.Options{{Sample: -1}, {MaxChecksPerSecond: -1}, {MaxChecksPerSecond: math.NaN()}, {Sinks: []string{""}}, {Sinks: []string{"a\nb"}}} {
		if _, err := reconcile.Run(ctx, nil, nil, o); err == nil {
			t.Errorf("Run took %+v", o)
		}
	}
	var o reconcile.Options
	o.EnsureDefaults()
	if o.MaxChecksPerSecond != reconcile.DefaultMaxChecksPerSecond || o.MaxBatchesPerCheck != reconcile.DefaultMaxBatchesPerCheck || o.Seed == 0 || o.Logger == nil {
		t.Fatalf("defaults: %+v", o)
	}
}

func TestRunSelectsSinks(t *testing.T) {
	tier := durableTier(t)
	record(t, tier, "a", "ckpt-a")
	record(t, tier, "b", "ckpt-b")
	a, b := &holdsAll{}, &holdsAll{}
	if _, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"a": a, "b": b}, fast("b")); err != nil {
		t.Fatal(err)
	}
	if a.calls != 0 || b.calls != 16 {
		t.Fatalf("sink a checked %d times, b %d (want 0 and 16 pieces)", a.calls, b.calls)
	}
	_, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"a": a}, fast("b"))
	if err == nil || !strings.Contains(err.Error(), `"b" has no checker`) {
		t.Fatalf("a sink without a checker: %v", err)
	}
}

func TestRunRefusesAnAnswerOutsideTheRange(t *testing.T) {
	tier := durableTier(t)
	record(t, tier, "a", "ckpt-a")
	rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"a": reaches{}}, fast())
	mustFailNaming(t, rep, err, "a", "outside")
	if !errors.Is(err, reconcile.ErrOutOfRange) {
		t.Fatal(err)
	}
}

func TestRunIsRateBounded(t *testing.T) {
	tier := durableTier(t)
	record(t, tier, "a", "ckpt-a")
	o := fast()
	o.MaxChecksPerSecond = 40 // 16 pieces: 15 waits of 25ms
	start := time.Now()
	if _, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"a": &holdsAll{}}, o); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Fatalf("16 checks at 40 a second took %v", d)
	}
}

func TestCountingSuspectsTheWholeRange(t *testing.T) {
	held, err := reconcile.Counting(counts{}).Held(ctx, coverage.Destination{Sink: "s", Topic: "t"}, []coverage.Range{{Start: 0, End: 5}, {Start: 5, End: 9}})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := coverage.NewRangeSet(coverage.Range{Start: 5, End: 9}); !held.Equal(&want) {
		t.Fatalf("held %v, want %v", held, &want)
	}
}

func TestTasks(t *testing.T) {
	rep := reconcile.Report{Absent: []reconcile.Row{
		{Sink: "pg", Topic: "t", Partition: 2, Start: 5, End: 9, Kind: reconcile.KindClaimedAbsent},
		{Sink: coverage.RawSink, Topic: "t", Partition: 2, Start: 1, End: 2, Kind: reconcile.KindClaimedAbsent},
	}}
	got := reconcile.Tasks(rep, "")
	want := []recovery.Task{
		{Destination: coverage.Destination{Sink: "pg", Topic: "t", Partition: 2}, Range: coverage.Range{Start: 5, End: 9}, Kind: recovery.KindReplay},
		{Destination: coverage.Destination{Sink: coverage.RawSink, Topic: "t", Partition: 2}, Range: coverage.Range{Start: 1, End: 2}, Kind: recovery.KindVerifyReference},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("tasks %+v, want %+v", got, want)
	}
}
