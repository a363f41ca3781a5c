package local

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/testseed"
)

// stateModel is what RecordStates and MarkStatesShipped promised: one copy
// per ID (gapstate.First's of two copies of a decision that differ),
// shipped or pending; a call naming an ID held for another decision
// records nothing.
type stateModel map[string]StateDiagnostics

// record applies a RecordStates call and reports whether it is refused
// (gapstate.ErrIDTaken).
func (m stateModel) record(events []gapstate.Event) (taken bool) {
	next := maps.Clone(m)
	for _, e := range events {
		old, ok := next[e.ID]
		if ok && !gapstate.SameDecision(&old.Event, &e) {
			return true
		}
		if ok && (gapstate.SameCopy(&old.Event, &e) || !gapstate.First(&e, &old.Event)) {
			continue
		}
		next[e.ID] = StateDiagnostics{Event: e}
	}
	maps.Copy(m, next)
	return false
}

func (m stateModel) pending() []gapstate.Event {
	var out []gapstate.Event
	for _, st := range m {
		if !st.Shipped {
			out = append(out, st.Event)
		}
	}
	slices.SortFunc(out, func(a, b gapstate.Event) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// key is a copy's identity for comparisons (At as an instant).
func stateText(st StateDiagnostics) string {
	return fmt.Sprintf("%s %s %v %s %q %q %d %v", st.ID, st.Destination, st.Range, st.State, st.Reason, st.By, st.At.UnixNano(), st.Shipped)
}

// TestStatesAgainstModel records gap states (IDs from a small pool, so
// the same ID comes back, sometimes as a differing copy), marks some
// shipped (sometimes a copy the store has replaced since), records
// coverage and reopens the store, at random, checking after every step
// that the store holds exactly the model's states, pending and shipped,
// and that no state is coverage: the destinations and their coverage are
// only what Record recorded.
func TestStatesAgainstModel(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 61))
	ctx := context.Background()
	dir := t.TempDir()
	s := openTemp(t, Options{Dir: dir})
	defer func() { _ = s.Close() }()
	model := stateModel{}
	covered := map[coverage.Destination]*coverage.RangeSet{}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	// An ID's first decision comes back three times in four (a retry,
	// stamped again), another decision under it otherwise.
	decided := map[string]gapstate.Event{}
	event := func() gapstate.Event {
		id := fmt.Sprintf("id-%d", rng.IntN(12))
		at := base.Add(time.Duration(rng.IntN(5)) * time.Second)
		if e, ok := decided[id]; ok && rng.IntN(4) > 0 {
			e.At = at
			return e
		}
		st := gapstate.States[rng.IntN(len(gapstate.States))]
		start := uint64(rng.IntN(50))
		e := gapstate.Event{ID: id,
			Destination: coverage.Destination{Sink: []string{"raw", "lake", "search"}[rng.IntN(3)], Topic: "orders", Partition: int32(rng.IntN(2))},
			Range:       coverage.Range{Start: start, End: start + 1 + uint64(rng.IntN(5))}, State: st,
			Reason: "r" + fmt.Sprint(rng.IntN(3)), By: "op", At: at}
		if _, ok := decided[id]; !ok {
			decided[id] = e
		}
		return e
	}
	ops := 300
	if testing.Short() {
		ops = 120
	}
	for step := range ops {
		var what string
		switch op := rng.IntN(10); {
		case op < 4:
			events := make([]gapstate.Event, 1+rng.IntN(4))
			for i := range events {
				events[i] = event()
			}
			what = fmt.Sprintf("record %d states", len(events))
			taken := model.record(events)
			if err := s.RecordStates(ctx, events); taken != errors.Is(err, gapstate.ErrIDTaken) || !taken && err != nil {
				t.Fatalf("seed %d step %d: RecordStates: %v; want an ID taken: %v", seed, step, err, taken)
			}
		case op < 5:
			bad := event()
			bad.Reason = ""
			what = "record an invalid state with a valid one"
			if err := s.RecordStates(ctx, []gapstate.Event{event(), bad}); !errors.Is(err, gapstate.ErrInvalidEvent) {
				t.Fatalf("seed %d step %d: an invalid event: %v, want gapstate.ErrInvalidEvent", seed, step, err)
			}
		case op < 7:
			// A shipper marks what it read as pending, some of it, and
			// sometimes a copy the store no longer holds: that stays.
			pending := s.PendingStates()
			var marks []gapstate.Event
			for _, e := range pending {
				if rng.IntN(3) > 0 {
					marks = append(marks, e)
				}
			}
			if len(marks) > 0 && rng.IntN(4) == 0 {
				stale := marks[0]
				stale.Reason += " (an older copy)"
				marks[0] = stale
			}
			what = fmt.Sprintf("mark %d of %d shipped", len(marks), len(pending))
			if err := s.MarkStatesShipped(ctx, marks); err != nil {
				t.Fatalf("seed %d step %d: MarkStatesShipped: %v", seed, step, err)
			}
			for _, e := range marks {
				if st, ok := model[e.ID]; ok && gapstate.SameCopy(&st.Event, &e) {
					st.Shipped = true
					model[e.ID] = st
				}
			}
		case op < 9:
			d := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 0}
			start := uint64(rng.IntN(60))
			r := coverage.Range{Start: start, End: start + 1 + uint64(rng.IntN(3))}
			what = fmt.Sprintf("record %v of %s", r, d)
			if err := s.Record(ctx, d, r); err != nil {
				t.Fatal(err)
			}
			if covered[d] == nil {
				covered[d] = new(coverage.RangeSet)
			}
			_ = covered[d].Add(r)
		default:
			what = "reopen"
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			s = openTemp(t, Options{Dir: dir})
		}
		checkStates(t, fmt.Sprintf("seed %d step %d (%s)", seed, step, what), s, model, covered)
	}
}

func checkStates(t *testing.T, at string, s *Store, model stateModel, covered map[coverage.Destination]*coverage.RangeSet) {
	t.Helper()
	ctx := context.Background()
	if got, want := s.PendingStates(), model.pending(); len(got) != len(want) || !slices.EqualFunc(got, want, func(a, b gapstate.Event) bool { return gapstate.SameCopy(&a, &b) }) {
		t.Fatalf("%s: pending states %v, want %v", at, got, want)
	}
	diag, err := s.Diagnostics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, st := range diag.States {
		got = append(got, stateText(st))
	}
	for _, st := range model {
		want = append(want, stateText(st))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: the store's states\n%s\nwant\n%s", at, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	dests, err := s.Destinations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(dests) != len(covered) {
		t.Fatalf("%s: destinations %v, want only those recorded as coverage (%d): a state was taken for coverage", at, dests, len(covered))
	}
	for d, want := range covered {
		set, err := s.Covered(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(set.Ranges(), want.Ranges()) {
			t.Fatalf("%s: %s covered %v, want %v", at, d, set.Ranges(), want.Ranges())
		}
	}
}
