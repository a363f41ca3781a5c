package recovery

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/testseed"
)

// outcome is what the scripted replayer answers for one task.
type outcome int

const (
	replayOK      outcome = iota
	replayFails           // an ordinary failure: Recover stops
	refusedAll            // *RefusedError, no ranges: the whole task
	refusedSome           // *RefusedError of ranges inside the task, wrapped
	lostSome              // *UnrecoverableError of ranges inside the task
	lostOutside           // *UnrecoverableError naming a range past the task: a bad answer
	lostNone              // *UnrecoverableError naming nothing: a bad answer
	recorderFails         // refused, and the recorder fails
	outcomes
)

// scripted answers each task as script says, by the task's index.
type scripted struct {
	script []outcome
	inside [][]coverage.Range // per task, the ranges its refusal or loss names
	calls  int
	rec    *memRecorder
}

func (s *scripted) Replay(_ context.Context, task Task) error {
	i := s.calls
	s.calls++
	switch s.script[i] {
	case replayOK:
		return nil
	case replayFails:
		return errors.New("connection reset")
	case refusedAll:
		return &RefusedError{Reason: "400 bad row\x1b[31m"}
	case refusedSome:
		return fmt.Errorf("http sink: %w", &RefusedError{Reason: "schema", Ranges: s.inside[i]})
	case lostSome:
		return &UnrecoverableError{Ranges: s.inside[i]}
	case lostOutside:
		return &UnrecoverableError{Ranges: []coverage.Range{{Start: task.Range.End, End: task.Range.End + 1}}}
	case lostNone:
		return &UnrecoverableError{}
	case recorderFails:
		s.rec.fail = true
		return &RefusedError{Reason: "403"}
	}
	return nil
}

func (s *scripted) VerifyReference(_ context.Context, task Task) ([]coverage.Range, error) {
	s.calls++
	return []coverage.Range{task.Range}, nil
}

type memRecorder struct {
	events []gapstate.Event
	fail   bool
}

func (m *memRecorder) AppendStates(_ context.Context, events []gapstate.Event) error {
	if m.fail {
		m.fail = false
		return errors.New("tier down")
	}
	if err := durable.ValidateStates(events); err != nil {
		return err
	}
	m.events = append(m.events, events...)
	return nil
}

// TestRecoverStatesModel: random tasks, answered at random, against a
// reference model: coverage is recorded exactly for the tasks done, every
// refusal and loss is recorded as its state and passed over, a bad answer
// or a failure stops with nothing recorded for it, and no state's batch is
// ever covered.
func TestRecoverStatesModel(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0x4e1d))
	at := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.UTC)
	for round := range 500 {
		n := 1 + rng.IntN(8)
		rec := &memRecorder{}
		r := &scripted{rec: rec}
		var tasks []Task
		for range n {
			d := coverage.Destination{Sink: []string{"lake", "search"}[rng.IntN(2)], Topic: "orders", Partition: int32(rng.IntN(2))}
			s := uint64(rng.IntN(100))
			task := Task{Destination: d, Range: rg(s, s+2+uint64(rng.IntN(20))), Kind: KindReplay}
			if rng.IntN(8) == 0 {
				task.Kind, task.Destination.Sink = KindVerifyReference, "raw"
			}
			tasks = append(tasks, task)
			r.script = append(r.script, outcome(rng.IntN(int(outcomes))))
			var inside []coverage.Range
			for cur := task.Range.Start; cur < task.Range.End; {
				a := cur + uint64(rng.IntN(int(task.Range.End-cur)))
				b := a + 1 + uint64(rng.IntN(int(task.Range.End-a)))
				inside = append(inside, rg(a, b))
				cur = b + 1
				if rng.IntN(2) == 0 {
					break
				}
			}
			r.inside = append(r.inside, inside)
		}
		store := coverage.NewInMemory()
		out, err := RecoverStates(ctx, tasks, r, store, RecoverOptions{States: rec, By: "recovery-worker", Now: func() time.Time { return at }})

		// The model.
		want := map[coverage.Destination]*coverage.RangeSet{}
		type ev struct {
			d     coverage.Destination
			r     coverage.Range
			state gapstate.State
		}
		var wantEvents []ev
		wantDone, wantHeld, wantStop := 0, 0, -1
		for i, task := range tasks {
			o := r.script[i]
			if task.Kind == KindVerifyReference {
				o = replayOK
			}
			switch o {
			case replayOK:
				if want[task.Destination] == nil {
					want[task.Destination] = new(coverage.RangeSet)
				}
				_ = want[task.Destination].Add(task.Range)
				wantDone++
				continue
			case refusedAll:
				wantEvents = append(wantEvents, ev{task.Destination, task.Range, gapstate.Refused})
			case refusedSome, lostSome:
				st := gapstate.Refused
				if o == lostSome {
					st = gapstate.Unrecoverable
				}
				for _, x := range r.inside[i] {
					wantEvents = append(wantEvents, ev{task.Destination, x, st})
				}
			default:
				wantStop = i
			}
			if wantStop >= 0 {
				break
			}
			wantHeld++
		}
		fail := func(format string, a ...any) {
			t.Helper()
			t.Fatalf("round %d (seed %d, script %v): %s", round, seed, r.script, fmt.Sprintf(format, a...))
		}
		if (err != nil) != (wantStop >= 0) {
			fail("RecoverStates = %v, want a stop at task %d", err, wantStop)
		}
		if wantStop >= 0 && r.calls != wantStop+1 {
			fail("the replayer was called %d times, want %d: Recover did not stop at task %d", r.calls, wantStop+1, wantStop)
		}
		if out.Done != wantDone || out.Held != wantHeld {
			fail("done %d, held %d; want %d, %d", out.Done, out.Held, wantDone, wantHeld)
		}
		got := coverageOf(t, store)
		for _, d := range slices.SortedFunc(func(yield func(coverage.Destination) bool) {
			for d := range got {
				if !yield(d) {
					return
				}
			}
		}, coverage.Destination.Compare) {
			w := want[d]
			if w == nil {
				w = new(coverage.RangeSet)
			}
			if !got[d].Equal(w) {
				fail("%v covered %v, want %v", d, got[d], w)
			}
		}
		for d, w := range want {
			if g := got[d]; g == nil || !g.Equal(w) {
				fail("%v covered %v, want %v", d, g, w)
			}
		}
		if len(rec.events) != len(wantEvents) || !slices.Equal(rec.events, out.States) {
			fail("recorded %v, returned %v, want %v", rec.events, out.States, wantEvents)
		}
		for i, e := range rec.events {
			w := wantEvents[i]
			if e.Destination != w.d || e.Range != w.r || e.State != w.state || e.By != "recovery-worker" || !e.At.Equal(at.Truncate(time.Microsecond)) {
				fail("event %d is %+v, want %v", i, e, w)
			}
			if err := e.Validate(); err != nil {
				fail("event %d does not validate: %v", i, err)
			}
			// A batch a state holds was never acknowledged by this run:
			// its coverage could only come from another task's ack.
			if c := got[e.Destination]; c != nil && overlaps(c, e.Range) {
				covered := false
				for j, task := range tasks[:out.Done+out.Held] {
					if task.Destination == e.Destination && r.script[j] == replayOK && task.Range.Start < e.Range.End && e.Range.Start < task.Range.End {
						covered = true
					}
				}
				if !covered {
					fail("the state %+v's batches are covered, and no task done holds them", e)
				}
			}
		}
	}
}

// TestRecoverWithoutStatesStops: without a recorder a refusal stops
// Recover like any failure, the error still found with errors.As, and
// nothing is recorded for it.
func TestRecoverWithoutStatesStops(t *testing.T) {
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	tasks := []Task{{Destination: d, Range: rg(0, 5)}, {Destination: d, Range: rg(5, 9)}}
	store := coverage.NewInMemory()
	done, err := Recover(ctx, tasks, ReplayFunc(func(context.Context, Task) error { return &RefusedError{Reason: "400"} }), store)
	var refused *RefusedError
	if done != 0 || !errors.As(err, &refused) {
		t.Fatalf("Recover = %d, %v; want 0 and a *RefusedError", done, err)
	}
	if got := coverageOf(t, store); len(got) != 0 {
		t.Fatalf("a refused replay was recorded as coverage: %v", got)
	}
	_, err = RecoverStates(ctx, tasks, ReplayFunc(func(context.Context, Task) error { return nil }), store, RecoverOptions{States: &memRecorder{}})
	if err == nil || !strings.Contains(err.Error(), "By") {
		t.Fatalf("RecoverStates without By = %v, want an error naming By", err)
	}
	if got := coverageOf(t, store); len(got) != 0 {
		t.Fatalf("RecoverStates without By recorded %v", got)
	}
}

// TestFitReason: a sink's error becomes a reason every tier takes.
func TestFitReason(t *testing.T) {
	for _, in := range []string{"", "  ", "a\x00b\rc\nd\te\x7f", "bad \xff utf8", strings.Repeat("é", gapstate.MaxReasonLen)} {
		e := gapstate.Event{ID: "x", Destination: coverage.Destination{Sink: "s", Topic: "t"}, Range: rg(0, 1),
			State: gapstate.Refused, Reason: fitReason(in, refusedReason), By: "w", At: time.Now()}
		if err := e.Validate(); err != nil {
			t.Errorf("fitReason(%q) = %q: %v", in, e.Reason, err)
		}
	}
	if got := fitReason("a\nb", "d"); got != "a\nb" {
		t.Errorf("fitReason kept %q, want the newline kept", got)
	}
}

func coverageOf(t *testing.T, s *coverage.InMemory) map[coverage.Destination]*coverage.RangeSet {
	t.Helper()
	ds, err := s.Destinations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[coverage.Destination]*coverage.RangeSet{}
	for _, d := range ds {
		set, err := s.Covered(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if !set.IsEmpty() {
			out[d] = &set
		}
	}
	return out
}
