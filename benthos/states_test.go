package benthos_test

import (
	"context"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/recovery"
	"github.com/covmirror/covmirror/tier"
)

// gapsWith are the committed gaps on state over 0..n-1 with the gap
// states the tier keeps, held ones included (waived too).
func gapsWith(t *testing.T, state string, n uint64) []recovery.Gap {
	t.Helper()
	ctx := context.Background()
	tr, closer, err := tier.Open(ctx, tier.Settings{State: state, Writer: "test"}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	gaps, err := recovery.CommittedGaps(ctx, tr, recovery.GapsFilter{All: true,
		Extents: []coverage.Extent{{Topic: "orders", Partition: 0, End: n}}})
	if err != nil {
		t.Fatal(err)
	}
	return gaps
}

// ranges are ids as half-open ranges.
func ranges(ids []uint64) []coverage.Range {
	var out []coverage.Range
	for _, id := range ids {
		if k := len(out); k > 0 && out[k-1].End == id {
			out[k-1].End++
			continue
		}
		out = append(out, coverage.Range{Start: id, End: id + 1})
	}
	return out
}

// ofKind are the ranges of sink's gaps of kind, adjacent ones (of two
// decisions) merged.
func ofKind(gaps []recovery.Gap, sink string, kind recovery.TaskKind) []coverage.Range {
	var ids []uint64
	for _, g := range gaps {
		if g.Sink == sink && g.Kind == kind {
			for id := g.Start; id < g.End; id++ {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ranges(ids)
}

// TestRefusedBatchesLeaveThePlan: an HTTP sink answers 400 for chosen
// batches, which the configuration names permanent: they end refused with
// the sink's error as the reason, every other batch written and covered,
// and CovmirrorBatchesRefused fires over the exported gap metrics; a
// replay does not write them again; after a reopen and the sink's fix, a
// replay covers them, no gap is left and no alert fires.
func TestRefusedBatchesLeaveThePlan(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 37))
	const n = 80
	bad := chosen(rng, n, 0.15)
	bad[uint64(rng.IntN(n))] = true // at least one
	var fixed atomic.Bool
	raw := newSinkServer(t, nil)
	lake := newSinkServer(t, func(id uint64, _ int) bool { return !fixed.Load() && bad[id] })
	lake.status = http.StatusBadRequest
	state := t.TempDir()
	lakeOut := covmirrorOutput("lake", false, state, httpOutput(lake))
	lakeOut["covmirror"].(obj)["permanent"] = obj{"status_codes": []int{400, 422}}
	run(t, stream(t, generate(n, 4), fanOut(covmirrorOutput("raw", true, state, httpOutput(raw)), lakeOut)))

	var badIDs, goodIDs []uint64
	for id := range uint64(n) {
		if bad[id] {
			badIDs = append(badIDs, id)
		} else {
			goodIDs = append(goodIDs, id)
		}
	}
	if got := committed(t, state)["lake"]; !slices.Equal(got, goodIDs) || !slices.Equal(lake.ids(), goodIDs) {
		t.Fatalf("lake holds %s with coverage %s, want %s", short(lake.ids()), short(got), short(goodIDs))
	}
	gaps := gapsWith(t, state, n)
	if got := ofKind(gaps, "lake", recovery.KindRefused); !slices.Equal(got, ranges(badIDs)) {
		t.Fatalf("lake's refused gaps %v, want %v (all gaps %v)", got, ranges(badIDs), gaps)
	}
	for _, g := range gaps {
		if g.Kind == recovery.KindRefused && (g.Decision == nil || !strings.Contains(g.Decision.Reason, "status code 400") || !strings.Contains(g.Decision.Reason, "refused")) {
			t.Errorf("refused gap %v: decision %+v, want the status code and the sink's error as the reason", g, g.Decision)
		}
	}
	// Alerted: CovmirrorBatchesRefused reads
	// covmirror_sink_missing_batches{kind="refused"} > 0.
	missing := gapSeries(t, state, n)
	if got := missing[series("covmirror_sink_missing_batches", "lake", "refused")]; got != float64(len(badIDs)) {
		t.Fatalf("lake's refused missing batches exported %v, want %d (series %v)", got, len(badIDs), missing)
	}
	assertAlerts(t, missing, "lake", "CovmirrorBatchesRefused")

	// A replay has nothing to write: refused batches are no task.
	writes := lake.writes()
	sinks := map[string]*sinkServer{"lake": lake}
	run(t, replayStream(t, state, raw, n, sinks))
	if w := lake.writes(); w != writes {
		t.Fatalf("a replay wrote %d more times to lake, want none (refused batches replayed)", w-writes)
	}

	// The operator fixes the sink and reopens the refused ranges.
	fixed.Store(true)
	var reopen []gapstate.Event
	for _, r := range ranges(badIDs) {
		reopen = append(reopen, gapstate.Event{ID: gapstate.NewID(), Destination: coverage.Destination{Sink: "lake", Topic: "orders", Partition: 0},
			Range: r, State: gapstate.Reopened, Reason: "schema fixed", By: "operator", At: time.Now().UTC().Add(time.Second)})
	}
	appendStates(t, state, reopen)
	run(t, replayStream(t, state, raw, n, sinks))
	if got := committed(t, state)["lake"]; !slices.Equal(got, upTo(n)) || !slices.Equal(lake.ids(), upTo(n)) {
		t.Fatalf("after the reopen and the replay lake holds %s with coverage %s, want every batch", short(lake.ids()), short(got))
	}
	if left := gapsWith(t, state, n); len(left) > 0 {
		t.Fatalf("after the reopen and the replay the gaps are %v, want none", left)
	}
	missing = gapSeries(t, state, n)
	if got, ok := missing[series("covmirror_sink_missing_batches", "lake", "refused")]; !ok || got != 0 {
		t.Fatalf("after the reopen and the replay lake's refused missing batches exported %v (exported %v), want 0", got, ok)
	}
	assertAlerts(t, missing, "lake")
}

// TestReplayOfLostBatchesEndsUnrecoverable: lake misses a stretch; raw
// then loses some of it (deleted from its store). The replay writes what
// raw holds and records exactly what it lacks as unrecoverable, which
// leaves the plan (a second replay writes nothing) and fires
// CovmirrorBatchesUnrecoverable; once waived it fires nothing and is still
// counted as missing, under kind waived.
func TestReplayOfLostBatchesEndsUnrecoverable(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 38))
	const n = 90
	start := uint64(rng.IntN(n - 40))
	var healthy atomic.Bool
	raw := newSinkServer(t, nil)
	lake := newSinkServer(t, func(id uint64, _ int) bool { return !healthy.Load() && id >= start && id < start+40 })
	state := t.TempDir()
	run(t, stream(t, generate(n, 4), fanOut(covmirrorOutput("raw", true, state, httpOutput(raw)), covmirrorOutput("lake", false, state, httpOutput(lake)))))
	lost := chosen(rng, 40, 0.3)
	var lostIDs []uint64
	raw.mu.Lock()
	for i := range uint64(40) {
		if lost[i] {
			delete(raw.held, start+i)
			lostIDs = append(lostIDs, start+i)
		}
	}
	raw.mu.Unlock()
	if len(lostIDs) == 0 {
		raw.mu.Lock()
		delete(raw.held, start)
		raw.mu.Unlock()
		lostIDs = []uint64{start}
	}
	healthy.Store(true)
	sinks := map[string]*sinkServer{"lake": lake}
	run(t, replayStream(t, state, raw, n, sinks))

	gaps := gapsWith(t, state, n)
	if got := ofKind(gaps, "lake", recovery.KindUnrecoverable); !slices.Equal(got, ranges(lostIDs)) {
		t.Fatalf("lake's unrecoverable gaps %v, want what raw lost %v (all gaps %v)", got, ranges(lostIDs), gaps)
	}
	if got := ofKind(gaps, "lake", recovery.KindReplay); len(got) > 0 {
		t.Fatalf("gaps left to replay %v, want none", got)
	}
	want := slices.DeleteFunc(upTo(n), func(id uint64) bool { _, ok := slices.BinarySearch(lostIDs, id); return ok })
	if got := committed(t, state)["lake"]; !slices.Equal(got, want) {
		t.Fatalf("lake's coverage %s, want all but what raw lost, %s", short(got), short(want))
	}
	// Alerted: CovmirrorBatchesUnrecoverable reads
	// covmirror_sink_missing_batches{kind="unrecoverable"} > 0.
	missing := gapSeries(t, state, n)
	if got := missing[series("covmirror_sink_missing_batches", "lake", "unrecoverable")]; got != float64(len(lostIDs)) {
		t.Fatalf("lake's unrecoverable missing batches exported %v, want %d (series %v)", got, len(lostIDs), missing)
	}
	assertAlerts(t, missing, "lake", "CovmirrorBatchesUnrecoverable")
	writes := lake.writes()
	run(t, replayStream(t, state, raw, n, sinks))
	if w := lake.writes(); w != writes {
		t.Fatalf("a second replay wrote %d more times, want none: the unrecoverable batches are out of the plan", w-writes)
	}

	// The operator cannot restore raw and waives the loss, with a reason:
	// the gaps leave the default list and stay listed with --all, with
	// who and why, and never become coverage.
	var waive []gapstate.Event
	for _, r := range ranges(lostIDs) {
		waive = append(waive, gapstate.Event{ID: gapstate.NewID(), Destination: coverage.Destination{Sink: "lake", Topic: "orders", Partition: 0},
			Range: r, State: gapstate.Waived, Reason: "raw's backup is gone too; accepted by the data owner", By: "ops@example", At: time.Now().UTC().Add(time.Second)})
	}
	appendStates(t, state, waive)
	gaps = gapsWith(t, state, n)
	if got := ofKind(gaps, "lake", recovery.KindWaived); !slices.Equal(got, ranges(lostIDs)) {
		t.Fatalf("lake's waived gaps %v, want what raw lost %v (all gaps %v)", got, ranges(lostIDs), gaps)
	}
	for _, g := range gaps {
		if g.Kind == recovery.KindWaived && (g.Decision == nil || g.Decision.By != "ops@example" || !strings.Contains(g.Decision.Reason, "accepted")) {
			t.Fatalf("a waived gap without its decision: %+v", g)
		}
	}
	if got := committed(t, state)["lake"]; !slices.Equal(got, want) {
		t.Fatalf("after the waiver lake's coverage is %s, want it unchanged, %s", short(got), short(want))
	}
	// Waived is not alerted, and still a gap: counted under its own kind.
	missing = gapSeries(t, state, n)
	if got, ok := missing[series("covmirror_sink_missing_batches", "lake", "unrecoverable")]; !ok || got != 0 {
		t.Fatalf("after the waiver lake's unrecoverable missing batches exported %v (exported %v), want 0", got, ok)
	}
	if got := missing[series("covmirror_sink_missing_batches", "lake", "waived")]; got != float64(len(lostIDs)) {
		t.Fatalf("after the waiver lake's waived missing batches exported %v, want %d: a waived batch is still missing", got, len(lostIDs))
	}
	if got := missing[series("covmirror_sink_gaps", "lake", "waived")]; got != float64(len(ranges(lostIDs))) {
		t.Fatalf("after the waiver lake's waived gaps exported %v, want %d", got, len(ranges(lostIDs)))
	}
	assertAlerts(t, missing, "lake")
}

// TestRefusedAfterAttempts: with permanent.attempts 2, a batch that fails
// (a 503, no status code named) once stays a plain gap, replayed; failing
// again in the replay it is refused, and a further replay leaves it.
func TestRefusedAfterAttempts(t *testing.T) {
	const n, bad = 20, 7
	raw := newSinkServer(t, nil)
	lake := newSinkServer(t, func(id uint64, _ int) bool { return id == bad })
	state := t.TempDir()
	lakeOut := covmirrorOutput("lake", false, state, httpOutput(lake))
	lakeOut["covmirror"].(obj)["permanent"] = obj{"attempts": 2, "status_codes": []int{400}}
	run(t, stream(t, generate(n, 1), fanOut(covmirrorOutput("raw", true, state, httpOutput(raw)), lakeOut)))
	if got := gapsWith(t, state, n); len(got) != 1 || got[0].Kind != recovery.KindReplay || got[0].Start != bad {
		t.Fatalf("after one failure the gaps are %v, want batch %d to replay", got, bad)
	}
	replay := replayStream(t, state, raw, n, map[string]*sinkServer{"lake": lake}, func(_, out obj) { out["permanent"] = obj{"attempts": 2} })
	run(t, replay)
	gaps := gapsWith(t, state, n)
	if len(gaps) != 1 || gaps[0].Kind != recovery.KindRefused || gaps[0].Start != bad || !strings.Contains(gaps[0].Decision.Reason, "failed 2 times") {
		t.Fatalf("after the second failure the gaps are %v, want batch %d refused after 2 attempts", gaps, bad)
	}
	writes := lake.attempt(bad)
	run(t, replay)
	if w := lake.attempt(bad); w != writes {
		t.Fatalf("a replay wrote the refused batch again (%d writes, was %d)", w, writes)
	}
}

// TestReplayPiecesFitTheTimeout: a replay of one long task to a slow sink
// whose output's timeout a task's batches cannot fit in one write: the
// first pieces time out (the sink may hold them, a gap still), the plan
// input cuts the next ones to the pace the output observed, and the
// replays converge: every batch held and covered within a few runs.
func TestReplayPiecesFitTheTimeout(t *testing.T) {
	const n = 240
	var healthy atomic.Bool
	raw := newSinkServer(t, nil)
	lake := newSlowSinkServer(t, func(id uint64, _ int) bool { return !healthy.Load() }, 10*time.Millisecond) // n batches: 2.4 s, past the timeout
	state := t.TempDir()
	run(t, stream(t, generate(n, 8), fanOut(covmirrorOutput("raw", true, state, httpOutput(raw)), covmirrorOutput("lake", false, state, httpOutput(lake)))))
	healthy.Store(true)
	replay := replayStream(t, state, raw, n, map[string]*sinkServer{"lake": lake}, func(plan, out obj) {
		plan["max_batches"], plan["replay_batch_max"], plan["sinks"], out["timeout"] = 10000, n, []string{"lake"}, "1s" // lake has no rows: named
	})
	runs := 0
	for ; runs < 6 && !slices.Equal(committed(t, state)["lake"], upTo(n)); runs++ {
		run(t, replay)
	}
	if got := committed(t, state)["lake"]; !slices.Equal(got, upTo(n)) {
		t.Fatalf("after %d replays lake's coverage is %s, want every batch: the pieces never fit the timeout", runs, short(got))
	}
	t.Logf("converged after %d replays", runs)
	if runs < 2 {
		t.Fatalf("the first replay covered everything: its one piece of %d batches was meant not to fit the timeout", n)
	}
}

// appendStates records events in the gap states of the tier on state.
func appendStates(t *testing.T, state string, events []gapstate.Event) {
	t.Helper()
	ctx := context.Background()
	tr, closer, err := tier.Open(ctx, tier.Settings{State: state, Writer: "test"}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	store, err := durable.StatesOf(tr)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.AppendStates(ctx, events); err != nil {
		t.Fatal(err)
	}
}

// statesOn are every gap state of the tier on state.
func statesOn(t *testing.T, state string) []gapstate.Event {
	t.Helper()
	ctx := context.Background()
	tr, closer, err := tier.Open(ctx, tier.Settings{State: state, Writer: "test"}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	store, err := durable.StatesOf(tr)
	if err != nil {
		t.Fatal(err)
	}
	events, err := store.States(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return events
}
