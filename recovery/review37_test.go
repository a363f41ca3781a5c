package recovery

import (
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
)

// TestRawUnrecoverableHoleLeavesThePlan: raw's retention job declares a
// hole in raw's own coverage unrecoverable (`covmirror unrecoverable`'s
// default sink is raw). No verifier can ever find those batches, so a
// verify-reference task of them would come back on every plan: a replay
// loop that nothing can hold, waive or silence short of recording coverage
// raw does not hold (a lead). The hole must be held like a sink's gap.
func TestRawUnrecoverableHoleLeavesThePlan(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	raw := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 0}
	lake := raw.WithSink("lake")
	rawSet, _ := coverage.NewRangeSet(coverage.Range{Start: 0, End: 10}, coverage.Range{Start: 20, End: 30})
	lakeSet, _ := coverage.NewRangeSet(coverage.Range{Start: 0, End: 30})
	all := map[coverage.Destination]*coverage.RangeSet{raw: &rawSet, lake: &lakeSet}
	for _, st := range []gapstate.State{gapstate.Unrecoverable, gapstate.Waived} {
		tier := &stateTier{mapTier: newMapTier(all), events: []gapstate.Event{{
			ID: "expired", Destination: raw, Range: coverage.Range{Start: 10, End: 20},
			State: st, Reason: "retention expired", By: "retention", At: at,
		}}}
		tasks, held, err := PlanHeld(ctx, tier, PlanOptions{MaxTasks: -1, MaxBatches: 1 << 62})
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			if task.Destination == raw && task.Range.Start < 20 && task.Range.End > 10 {
				t.Errorf("raw %s [10,20): still planned as %s %s on every plan; held: %+v", st, task.Kind, task.Range, held)
			}
		}
	}
}

// TestReopenAfterASkewedRefusal: a pod whose clock runs 10 minutes ahead
// records a refusal; five minutes later (real time) an operator fixes the
// sink and runs `covmirror reopen`, which succeeds and prints "reopened".
// The refusal's At is still later than the reopen's, so the range stays
// refused: out of the plan, never replayed, although the operator's
// decision is the later one.
func TestReopenAfterASkewedRefusal(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	raw := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 0}
	lake := raw.WithSink("lake")
	rawSet, _ := coverage.NewRangeSet(coverage.Range{Start: 0, End: 40})
	lakeSet, _ := coverage.NewRangeSet(coverage.Range{Start: 30, End: 40})
	all := map[coverage.Destination]*coverage.RangeSet{raw: &rawSet, lake: &lakeSet}
	tier := &stateTier{mapTier: newMapTier(all), events: []gapstate.Event{
		{ID: "pod", Destination: lake, Range: coverage.Range{Start: 0, End: 30}, State: gapstate.Refused,
			Reason: "400", By: "pod-7", At: now.Add(10 * time.Minute)}, // the pod's clock
		{ID: "op", Destination: lake, Range: coverage.Range{Start: 0, End: 30}, State: gapstate.Reopened,
			Reason: "sink fixed", By: "alice", At: now.Add(5 * time.Minute)}, // recorded after, by a right clock
	}}
	tasks, held, err := PlanHeld(ctx, tier, PlanOptions{MaxTasks: -1, MaxBatches: 1 << 62})
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) == 0 || len(held) > 0 {
		t.Errorf("after the reopen: tasks %+v, held %+v: the reopened range is never replayed", tasks, held)
	}
}

// TestHeldErrorsQuoteTheSinksWords: a refusal's reason is the sink's own
// answer; its error text, which Recover returns and a caller logs, carries
// no control character and no line break of it.
func TestHeldErrorsQuoteTheSinksWords(t *testing.T) {
	hostile := "400\x1b[2J\r\nlevel=INFO msg=\"all replayed\"\x00"
	for _, err := range []error{
		&RefusedError{Reason: hostile},
		&UnrecoverableError{Reason: hostile, Ranges: []coverage.Range{{Start: 1, End: 2}}},
	} {
		if text := err.Error(); strings.ContainsAny(text, "\x1b\r\n\x00") {
			t.Errorf("%T's text carries the sink's control characters as they are: %q", err, text)
		}
	}
}
