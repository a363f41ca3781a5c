package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
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

// rawReplayer replays only what raw really holds, and records the
// verifications it is asked for.
type rawReplayer struct {
	raw      *coverage.RangeSet
	verified []recovery.Task
}

func (r *rawReplayer) Replay(_ context.Context, t recovery.Task) error {
	if !r.raw.ContainsRange(t.Range) {
		return fmt.Errorf("raw does not hold %v", t.Range)
	}
	return nil
}

func (r *rawReplayer) VerifyReference(_ context.Context, t recovery.Task) ([]coverage.Range, error) {
	r.verified = append(r.verified, t)
	return nil, nil
}

// Tasks orders the reference's verifications first, replays only what the
// reference committed and holds, and cuts every task to maxBatches: so
// recovery.Recover runs them all, the reference's verification included.
func TestTasksVerifyFirstClippedAndCut(t *testing.T) {
	tier := durableTier(t)
	pg := coverage.Destination{Sink: "pg", Topic: "t", Partition: 0}
	appendRanges(t, tier, "c-pg", pg, coverage.Range{Start: 0, End: 30_100})
	appendRanges(t, tier, "c-raw", pg.WithSink(coverage.RawSink), coverage.Range{Start: 0, End: 25_000})
	// pg lost [3,5) and [100,30100); raw lost [3,5) too.
	pgHeld := func(_ context.Context, _ coverage.Destination, rs []coverage.Range) (*coverage.RangeSet, error) {
		s, _ := coverage.NewRangeSet(rs...)
		g := coverage.Gaps(&s, mustSet(t, coverage.Range{Start: 3, End: 5}, coverage.Range{Start: 100, End: 30_100}))
		return &g, nil
	}
	rawHeld := func(_ context.Context, _ coverage.Destination, rs []coverage.Range) (*coverage.RangeSet, error) {
		s, _ := coverage.NewRangeSet(rs...)
		g := coverage.Gaps(&s, mustSet(t, coverage.Range{Start: 3, End: 5}))
		return &g, nil
	}
	o := fast()
	o.MaxBatchesPerCheck = 10_000
	rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"pg": heldFunc(pgHeld), coverage.RawSink: heldFunc(rawHeld)}, o)
	if err != nil {
		t.Fatal(err)
	}
	tasks := reconcile.Tasks(rep, "", 0)
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "t", Partition: 0}
	want := []recovery.Task{
		{Destination: raw, Range: coverage.Range{Start: 3, End: 5}, Kind: recovery.KindVerifyReference},
		{Destination: pg, Range: coverage.Range{Start: 100, End: 10_100}, Kind: recovery.KindReplay},
		{Destination: pg, Range: coverage.Range{Start: 10_100, End: 20_100}, Kind: recovery.KindReplay},
		{Destination: pg, Range: coverage.Range{Start: 20_100, End: 25_000}, Kind: recovery.KindReplay},
	}
	if !slices.Equal(tasks, want) {
		t.Fatalf("tasks\n %+v\nwant\n %+v", tasks, want)
	}
	r := &rawReplayer{raw: mustSet(t, coverage.Range{Start: 0, End: 3}, coverage.Range{Start: 5, End: 25_000})}
	if done, err := recovery.Recover(ctx, tasks, r, coverage.NewInMemory()); err != nil || done != len(tasks) || len(r.verified) != 1 {
		t.Fatalf("recover: %d of %d done, %d verified, err %v", done, len(tasks), len(r.verified), err)
	}
	if got := reconcile.Tasks(rep, "", 3_000); len(got) != 1+9 || got[1].Range.Len() != 3_000 {
		t.Fatalf("cut to 3,000: %d tasks: %+v", len(got), got)
	}
	// A report without the reference's coverage (one decoded from JSON)
	// replays nothing, but still verifies the reference.
	if got := reconcile.Tasks(reconcile.Report{Absent: rep.Absent}, "", 0); !slices.Equal(got, want[:1]) {
		t.Fatalf("tasks of a bare report: %+v", got)
	}
}

type heldFunc func(context.Context, coverage.Destination, []coverage.Range) (*coverage.RangeSet, error)

func (f heldFunc) Held(ctx context.Context, d coverage.Destination, rs []coverage.Range) (*coverage.RangeSet, error) {
	return f(ctx, d, rs)
}

func mustSet(t testing.TB, rs ...coverage.Range) *coverage.RangeSet {
	t.Helper()
	s, err := coverage.NewRangeSet(rs...)
	if err != nil {
		t.Fatal(err)
	}
	return &s
}

func appendRanges(t testing.TB, tier durable.Tier, name string, d coverage.Destination, rs ...coverage.Range) {
	t.Helper()
	if err := tier.Append(ctx, durable.Checkpoint{Name: name, Writer: "test", Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: rs}}}); err != nil {
		t.Fatal(err)
	}
}

// A checker under a sink name the tier has no coverage of (a misspelling)
// is a failure naming it and the sinks that have coverage, never a clean
// report.
func TestRunRefusesASinkWithoutCoverage(t *testing.T) {
	tier := durableTier(t)
	appendRanges(t, tier, "c1", coverage.Destination{Sink: "pg", Topic: "t"}, coverage.Range{Start: 0, End: 10})
	for _, o := range []reconcile.Options{fast("pgg"), fast()} {
		rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"pgg": &holdsAll{}}, o)
		var nc *reconcile.NoCoverageError
		if !errors.Is(err, reconcile.ErrNoCoverage) || !errors.As(err, &nc) || nc.Sink != "pgg" || !slices.Equal(nc.Sinks, []string{"pg"}) {
			t.Fatalf("err %v, want a NoCoverageError naming pgg and pg", err)
		}
		if !strings.Contains(err.Error(), `"pgg"`) || !strings.Contains(err.Error(), `["pg"]`) {
			t.Fatalf("error does not name the sinks: %v", err)
		}
		if len(rep.Failures) != 1 || len(rep.Checked) != 1 || !rep.Checked[0].Failed {
			t.Fatalf("report %+v", rep)
		}
	}
}

// One destination whose check fails does not hide the others': partition
// 0's lost batch 3 is reported while partition 1 fails, and the failure
// names partition 1.
func TestRunReportsTheDestinationsPastAFailedOne(t *testing.T) {
	tier := durableTier(t)
	for p := range int32(3) {
		appendRanges(t, tier, fmt.Sprint("c", p), coverage.Destination{Sink: "s", Topic: "t", Partition: p}, coverage.Range{Start: 0, End: 10})
	}
	c := heldFunc(func(_ context.Context, d coverage.Destination, rs []coverage.Range) (*coverage.RangeSet, error) {
		if d.Partition == 1 {
			return nil, errors.New("500 Internal Server Error")
		}
		s, _ := coverage.NewRangeSet(rs...)
		g := coverage.Gaps(&s, mustSet(t, coverage.Range{Start: 3, End: 4}))
		return &g, nil
	})
	rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"s": c}, fast())
	var ce *reconcile.CheckError
	if !errors.As(err, &ce) || ce.Destination.Partition != 1 || len(rep.Failures) != 1 {
		t.Fatalf("err %v, failures %v: want one CheckError of partition 1", err, rep.Failures)
	}
	sameRows(t, "past the failed destination", rep.Absent, []reconcile.Row{
		{Sink: "s", Topic: "t", Partition: 0, Start: 3, End: 4, Kind: reconcile.KindClaimedAbsent},
		{Sink: "s", Topic: "t", Partition: 2, Start: 3, End: 4, Kind: reconcile.KindClaimedAbsent},
	})
	if ch := rep.Checked[0]; !ch.Failed || ch.FailedDestinations != 1 || ch.Destinations != 3 {
		t.Fatalf("checked %+v", ch)
	}
}

// A check returning a partial answer with no error as ctx ends is not
// believed: no rows, ctx's error.
func TestRunDistrustsACheckAsItsContextEnds(t *testing.T) {
	tier := durableTier(t)
	appendRanges(t, tier, "c1", coverage.Destination{Sink: "s", Topic: "t"}, coverage.Range{Start: 0, End: 5})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c := heldFunc(func(context.Context, coverage.Destination, []coverage.Range) (*coverage.RangeSet, error) {
		cancel() // the deadline strikes during the check
		return new(coverage.RangeSet), nil
	})
	rep, err := reconcile.Run(cctx, tier, map[string]reconcile.Checker{"s": c}, fast())
	if !errors.Is(err, context.Canceled) || len(rep.Absent) != 0 {
		t.Fatalf("rows %v, err %v: want no rows and context.Canceled", rep.Absent, err)
	}
}

// A sample of one piece of a 2^62-batch range allocates only that piece,
// and the same seed, sample, MaxBatchesPerCheck and coverage (all in the
// report) ask the same piece again.
func TestRunSampleBuildsOnlyItsPieces(t *testing.T) {
	tier := durableTier(t)
	d := coverage.Destination{Sink: "s", Topic: "t"}
	appendRanges(t, tier, "c1", d, coverage.Range{Start: 0, End: 1 << 62})
	o := reconcile.Options{Sample: 1, Seed: 7, MaxChecksPerSecond: 1000}
	ask := func() (reconcile.Report, []coverage.Range, uint64) {
		s := &spy{Checker: &holdsAll{}}
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		rep, err := reconcile.Run(ctx, tier, map[string]reconcile.Checker{"s": s}, o)
		runtime.ReadMemStats(&m1)
		if err != nil {
			t.Fatal(err)
		}
		return rep, s.asked[d], m1.TotalAlloc - m0.TotalAlloc
	}
	rep, first, alloc := ask()
	if len(first) != 1 || first[0].Len() != reconcile.DefaultMaxBatchesPerCheck || alloc > 8<<20 {
		t.Fatalf("asked %v, allocated %d bytes", first, alloc)
	}
	if rep.Seed != 7 || rep.Sample != 1 || rep.MaxBatchesPerCheck != reconcile.DefaultMaxBatchesPerCheck {
		t.Fatalf("report does not say how to replay the sample: %+v", rep)
	}
	o = reconcile.Options{Sample: rep.Sample, Seed: rep.Seed, MaxBatchesPerCheck: rep.MaxBatchesPerCheck, MaxChecksPerSecond: 1000}
	if _, again, _ := ask(); !slices.Equal(first, again) {
		t.Fatalf("the same options asked %v, then %v", first, again)
	}
}
