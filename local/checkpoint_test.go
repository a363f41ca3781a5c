package local

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/testseed"
)

var ctx = context.Background()

func rng(t *testing.T) *rand.Rand {
	seed := testseed.Seed(t)
	return rand.New(rand.NewPCG(seed, 0))
}

func record(t testing.TB, s *Store, d coverage.Destination, start, end uint64) {
	t.Helper()
	if err := s.Record(ctx, d, coverage.Range{Start: start, End: end}); err != nil {
		t.Fatal(err)
	}
}

func pendingOf(t testing.TB, s *Store) map[coverage.Destination][]coverage.Range {
	t.Helper()
	diag, err := s.Diagnostics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[coverage.Destination][]coverage.Range{}
	for _, dd := range diag.Destinations {
		if len(dd.Pending) > 0 {
			out[dd.Destination] = dd.Pending
		}
	}
	return out
}

func rangesOf(cp *Checkpoint) map[coverage.Destination][]coverage.Range {
	out := map[coverage.Destination][]coverage.Range{}
	if cp != nil {
		for _, dr := range cp.Ranges {
			out[dr.Destination] = dr.Ranges
		}
	}
	return out
}

func equalRanges(a, b map[coverage.Destination][]coverage.Range) bool {
	if len(a) != len(b) {
		return false
	}
	for d, rs := range a {
		if !slices.Equal(rs, b[d]) {
			return false
		}
	}
	return true
}

func TestCheckpointLifecycle(t *testing.T) {
	s := openTemp(t, Options{})
	defer s.Close()
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	record(t, s, d, 1, 5)
	record(t, s, d, 7, 9)
	cp, err := s.BeginCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := map[coverage.Destination][]coverage.Range{d: {rg(1, 5), rg(7, 9)}}
	if !equalRanges(rangesOf(cp), want) || cp.ID != 1 || cp.Batches() != 6 {
		t.Fatalf("first checkpoint %+v", cp)
	}
	if _, err := s.BeginCheckpoint(ctx); !errors.Is(err, ErrCheckpointInFlight) {
		t.Fatalf("second begin while one is in flight: %v", err)
	}
	record(t, s, d, 5, 7) // recorded while the checkpoint is in flight
	if err := s.CommitCheckpoint(ctx, &Checkpoint{ID: 99, Store: cp.Store}); !errors.Is(err, ErrUnknownCheckpoint) {
		t.Fatalf("commit of another checkpoint: %v", err)
	}
	if err := s.CommitCheckpoint(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if got := pendingOf(t, s); !equalRanges(got, map[coverage.Destination][]coverage.Range{d: {rg(5, 7)}}) {
		t.Fatalf("after commit, pending %v; want only what was recorded in flight", got)
	}
	cp2, err := s.BeginCheckpoint(ctx)
	if err != nil || cp2.ID != 2 || !equalRanges(rangesOf(cp2), map[coverage.Destination][]coverage.Range{d: {rg(5, 7)}}) {
		t.Fatalf("second checkpoint %+v, %v", cp2, err)
	}
	if err := s.AbortCheckpoint(ctx, cp2); err != nil {
		t.Fatal(err)
	}
	if got := pendingOf(t, s); !equalRanges(got, rangesOf(cp2)) {
		t.Fatalf("after abort, pending %v; want the aborted delta back", got)
	}
	cp3, err := s.BeginCheckpoint(ctx)
	if err != nil || cp3.ID != 3 || !equalRanges(rangesOf(cp3), rangesOf(cp2)) {
		t.Fatalf("checkpoint after abort %+v, %v", cp3, err)
	}
	if err := s.CommitCheckpoint(ctx, cp3); err != nil {
		t.Fatal(err)
	}
	if cp, err := s.BeginCheckpoint(ctx); cp != nil || err != nil {
		t.Fatalf("nothing pending, yet begin gave %+v, %v", cp, err)
	}
}

func TestCheckpointInFlightSurvivesReopen(t *testing.T) {
	dir := t.TempDir()
	s := openTemp(t, Options{Dir: dir})
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	record(t, s, d, 10, 20)
	cp, err := s.BeginCheckpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	record(t, s, d, 30, 31)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTemp(t, Options{Dir: dir})
	defer s.Close()
	again, err := s.BeginCheckpoint(ctx)
	if err != nil || !again.Resumed || again.Name() != cp.Name() || !equalRanges(rangesOf(again), rangesOf(cp)) {
		t.Fatalf("after reopen: %+v, %v; want %s again, resumed", again, err, cp.Name())
	}
	if err := s.CommitCheckpoint(ctx, again); err != nil {
		t.Fatal(err)
	}
	next, err := s.BeginCheckpoint(ctx)
	if err != nil || next.ID != cp.ID+1 || !equalRanges(rangesOf(next), map[coverage.Destination][]coverage.Range{d: {rg(30, 31)}}) {
		t.Fatalf("next checkpoint %+v, %v", next, err)
	}
}

// TestCheckpointRandomizedAgainstModel drives records, checkpoints, aborts
// and reopens at random and compares pending and checkpointed ranges with a
// per-batch model: nothing is ever checkpointed that was not in a committed
// checkpoint, and nothing recorded is ever dropped from pending otherwise.
func TestCheckpointRandomizedAgainstModel(t *testing.T) {
	r := rng(t)
	dir := t.TempDir()
	s := openTemp(t, Options{Dir: dir})
	defer func() { _ = s.Close() }()
	const universe = 200
	dests := []coverage.Destination{{Sink: "a", Topic: "t"}, {Sink: "b", Topic: "t", Partition: 1}}
	covered := map[coverage.Destination][]bool{}
	marked := map[coverage.Destination][]bool{}
	for _, d := range dests {
		covered[d], marked[d] = make([]bool, universe), make([]bool, universe)
	}
	var inFlight *Checkpoint
	for step := range 600 {
		switch op := r.IntN(20); {
		case op < 12:
			d := dests[r.IntN(len(dests))]
			start := uint64(r.IntN(universe - 1))
			end := min(start+1+uint64(r.IntN(5)), universe)
			record(t, s, d, start, end)
			for b := start; b < end; b++ {
				covered[d][b] = true
			}
		case op < 15 && inFlight == nil:
			cp, err := s.BeginCheckpoint(ctx)
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			want := modelPending(covered, marked)
			if cp != nil && cp.Resumed {
				t.Fatalf("step %d: resumed checkpoint without a reopen", step)
			}
			if !equalRanges(rangesOf(cp), want) {
				t.Fatalf("step %d: checkpoint %v, model pending %v", step, rangesOf(cp), want)
			}
			inFlight = cp
		case op < 17 && inFlight != nil:
			if err := s.CommitCheckpoint(ctx, inFlight); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			for _, dr := range inFlight.Ranges {
				for _, rg := range dr.Ranges {
					for b := rg.Start; b < rg.End; b++ {
						marked[dr.Destination][b] = true
					}
				}
			}
			inFlight = nil
		case op < 18 && inFlight != nil:
			if err := s.AbortCheckpoint(ctx, inFlight); err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			inFlight = nil
		case op >= 18:
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openTemp(t, Options{Dir: dir})
			if inFlight != nil {
				cp, err := s.BeginCheckpoint(ctx)
				if err != nil || !cp.Resumed || cp.Name() != inFlight.Name() {
					t.Fatalf("step %d: after reopen %+v, %v; want %s resumed", step, cp, err, inFlight.Name())
				}
				inFlight = cp
			}
		}
		if got, want := pendingOf(t, s), modelPending(covered, marked); !equalRanges(got, want) {
			t.Fatalf("step %d: pending %v, model %v", step, got, want)
		}
		for _, d := range dests {
			set, _ := s.Covered(ctx, d)
			for b, want := range covered[d] {
				if set.Contains(uint64(b)) != want {
					t.Fatalf("step %d: %s batch %d covered=%v, model %v", step, d, b, !want, want)
				}
			}
		}
	}
}

func modelPending(covered, marked map[coverage.Destination][]bool) map[coverage.Destination][]coverage.Range {
	out := map[coverage.Destination][]coverage.Range{}
	for d, bits := range covered {
		var rs []coverage.Range
		for b := 0; b < len(bits); b++ {
			if bits[b] && !marked[d][b] {
				e := b
				for e < len(bits) && bits[e] && !marked[d][e] {
					e++
				}
				rs = append(rs, coverage.Range{Start: uint64(b), End: uint64(e)})
				b = e
			}
		}
		if len(rs) > 0 {
			out[d] = rs
		}
	}
	return out
}

func TestDiagnosticsShowDrift(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := openTemp(t, Options{Now: func() time.Time { return clock }})
	defer s.Close()
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders", Partition: 2}
	lake := raw.WithSink("lake")
	record(t, s, raw, 1, 101)
	record(t, s, lake, 1, 30)
	record(t, s, lake, 41, 70)
	cp, _ := s.BeginCheckpoint(ctx)
	clock = clock.Add(time.Minute)
	record(t, s, lake, 71, 90)
	_ = s.CommitCheckpoint(ctx, cp)
	clock = clock.Add(30 * time.Second)
	diag, err := s.Diagnostics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diag.LastCheckpointID != 1 || diag.PendingBatches != 19 || len(diag.Destinations) != 2 {
		t.Fatalf("diagnostics %+v", diag)
	}
	got := diag.Destinations[0] // "lake" sorts before "raw"
	if got.Destination != lake || !slices.Equal(got.Gaps, []coverage.Range{rg(30, 41), rg(70, 71), rg(90, 101)}) ||
		!slices.Equal(got.Pending, []coverage.Range{rg(71, 90)}) || got.OldestPendingAge != "30s" {
		t.Fatalf("lake diagnostics %+v", got)
	}
	if fmt.Sprint(diag.Destinations[1].Gaps) != "[]" || diag.Destinations[1].PendingBatches != 0 {
		t.Fatalf("raw diagnostics %+v", diag.Destinations[1])
	}
}

func rg(start, end uint64) coverage.Range { return coverage.Range{Start: start, End: end} }

func TestCheckpointCodecRoundTrip(t *testing.T) {
	r := rng(t)
	for range 200 {
		cp := &Checkpoint{ID: r.Uint64(), Store: "S" + fmt.Sprint(r.IntN(100)), BegunAt: time.Unix(0, r.Int64()).UTC()}
		for d := range r.IntN(4) {
			dr := coverage.DestinationRanges{Destination: coverage.Destination{Sink: fmt.Sprint("s", d), Topic: "t\x00" + fmt.Sprint(d), Partition: int32(r.IntN(5))}}
			var at uint64
			for range r.IntN(50) {
				at += uint64(r.IntN(1000)) + 1
				n := uint64(r.IntN(100)) + 1
				dr.Ranges = append(dr.Ranges, rg(at, at+n))
				at += n
			}
			cp.Ranges = append(cp.Ranges, dr)
		}
		enc, err := encodeCheckpoint(cp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeCheckpoint(enc)
		if err != nil || got.Name() != cp.Name() || !got.BegunAt.Equal(cp.BegunAt) || len(got.Ranges) != len(cp.Ranges) {
			t.Fatalf("round trip of %+v: %+v, %v", cp, got, err)
		}
		for i := range cp.Ranges {
			if got.Ranges[i].Destination != cp.Ranges[i].Destination || !slices.Equal(got.Ranges[i].Ranges, cp.Ranges[i].Ranges) {
				t.Fatalf("destination %d: %+v, want %+v", i, got.Ranges[i], cp.Ranges[i])
			}
		}
		if len(enc) > 0 {
			if _, err := decodeCheckpoint(enc[:r.IntN(len(enc))]); err == nil {
				t.Fatalf("a truncated encoding decoded")
			}
		}
	}
}

func TestPendingBatchesMatchesDiagnostics(t *testing.T) {
	s := openTemp(t, Options{})
	defer s.Close()
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	record(t, s, d, 1, 10)
	cp, _ := s.BeginCheckpoint(ctx)
	record(t, s, d, 20, 25)
	same := func(step string) {
		diag, err := s.Diagnostics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.PendingBatches(); got != diag.PendingBatches {
			t.Fatalf("%s: PendingBatches %d, diagnostics %d", step, got, diag.PendingBatches)
		}
	}
	same("in flight")
	if err := s.CommitCheckpoint(ctx, cp); err != nil {
		t.Fatal(err)
	}
	same("committed")
	if got := s.PendingBatches(); got != 5 {
		t.Fatalf("after the commit %d batches pending, want the 5 recorded in flight", got)
	}
}
