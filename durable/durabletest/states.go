package durabletest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// runStates runs the gap-state scenarios; a tier without a StateStore
// fails them: every durable tier keeps gap states.
func runStates(t *testing.T, h Harness) {
	t.Run("StatesAgainstModel", func(t *testing.T) { testStatesAgainstModel(t, h) })
	t.Run("StatesConcurrentWritersUnion", func(t *testing.T) { testStatesConcurrent(t, h) })
	t.Run("StatesBadInputWritesNothing", func(t *testing.T) { testStatesBadInput(t, h) })
	t.Run("StatesHostileText", func(t *testing.T) { testStatesHostile(t, h) })
}

func statesOf(t *testing.T, tier durable.Tier) durable.StateStore {
	t.Helper()
	s, err := durable.StatesOf(tier)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var stateBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// randomEvent is a valid event of partitions 0 to 2 of orders and users.
// At is whole microseconds: what every tier keeps.
func randomEvent(rng *rand.Rand, by string) gapstate.Event {
	start := uint64(rng.IntN(1000))
	return gapstate.Event{
		ID: gapstate.NewID(),
		Destination: coverage.Destination{
			Sink:      []string{"raw", "lake", "search"}[rng.IntN(3)],
			Topic:     []string{"orders", "users"}[rng.IntN(2)],
			Partition: int32(rng.IntN(3)),
		},
		Range:  coverage.Range{Start: start, End: start + 1 + uint64(rng.IntN(50))},
		State:  gapstate.States[rng.IntN(len(gapstate.States))],
		Reason: fmt.Sprintf("reason %d", rng.IntN(1000)),
		By:     by,
		At:     stateBase.Add(time.Duration(rng.Int64N(int64(time.Hour))) / time.Microsecond * time.Microsecond),
	}
}

// stateModel is every event appended, by ID.
type stateModel map[string]gapstate.Event

func (m stateModel) check(t *testing.T, what string, s durable.StateStore, f durable.Filter) {
	t.Helper()
	got, err := s.States(ctx, f)
	if err != nil {
		t.Fatalf("%s: States(%+v): %v", what, f, err)
	}
	match := f.Matcher()
	seen := map[string]bool{}
	for _, e := range got {
		if seen[e.ID] {
			t.Fatalf("%s: event %q returned twice", what, e.ID)
		}
		seen[e.ID] = true
		want, ok := m[e.ID]
		switch {
		case !ok:
			t.Fatalf("%s: event %q was never appended: %+v", what, e.ID, e)
		case !match(e.Destination):
			t.Fatalf("%s: event %q of %v is not selected by %+v", what, e.ID, e.Destination, f)
		case !sameEvent(e, want):
			t.Fatalf("%s: event %q reads back as %+v, appended as %+v", what, e.ID, e, want)
		}
	}
	for id, e := range m {
		if match(e.Destination) && !seen[id] {
			t.Fatalf("%s: appended event %q of %v is missing from States(%+v)", what, id, e.Destination, f)
		}
	}
}

func sameEvent(a, b gapstate.Event) bool {
	return a.ID == b.ID && a.Destination == b.Destination && a.Range == b.Range && a.State == b.State &&
		a.Reason == b.Reason && a.By == b.By && a.At.Equal(b.At)
}

func testStatesAgainstModel(t *testing.T, h Harness) {
	open := h.New(t)
	tier := open(t)
	s := statesOf(t, tier)
	rng := rand.New(rand.NewPCG(seed(t, h), 37))
	m := stateModel{}
	var appended []gapstate.Event
	for i := range h.ops(30) {
		var batch []gapstate.Event
		for range 1 + rng.IntN(4) {
			e := randomEvent(rng, "pod-a")
			batch = append(batch, e)
			m[e.ID] = e
		}
		if len(appended) > 0 && rng.IntN(3) == 0 {
			batch = append(batch, appended[rng.IntN(len(appended))]) // a retry of an earlier event
		}
		if err := s.AppendStates(ctx, batch); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		appended = append(appended, batch...)
		what := fmt.Sprintf("after append %d", i)
		p := int32(rng.IntN(3))
		m.check(t, what, s, durable.Filter{})
		m.check(t, what, s, durable.Filter{Sink: "lake"})
		m.check(t, what, s, durable.Filter{Topic: "orders", Partition: &p})
		m.check(t, what, s, durable.Filter{Partitions: randomPartitions(rng)})
	}
	m.check(t, "from another client", statesOf(t, open(t)), durable.Filter{})
	// A state is never coverage: no Coverage holds any of these ranges.
	cov, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for d, set := range cov {
		if !set.IsEmpty() {
			t.Fatalf("gap states alone made coverage of %v: %v", d, set.String())
		}
	}
}

func testStatesConcurrent(t *testing.T, h Harness) {
	open := h.New(t)
	rng := rand.New(rand.NewPCG(seed(t, h), 38))
	const writers = 4
	batches := make([][][]gapstate.Event, writers)
	m := stateModel{}
	for w := range batches {
		for range h.ops(10) {
			var b []gapstate.Event
			for range 1 + rng.IntN(3) {
				e := randomEvent(rng, fmt.Sprintf("pod-%d", w))
				b = append(b, e)
				m[e.ID] = e
			}
			batches[w] = append(batches[w], b)
		}
	}
	stores := make([]durable.StateStore, writers)
	for w := range stores {
		stores[w] = statesOf(t, open(t))
	}
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for _, b := range batches[w] {
				if err := stores[w].AppendStates(ctx, b); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	m.check(t, "after concurrent writers", statesOf(t, open(t)), durable.Filter{})
}

func testStatesBadInput(t *testing.T, h Harness) {
	s := statesOf(t, h.New(t)(t))
	rng := rand.New(rand.NewPCG(seed(t, h), 39))
	good := randomEvent(rng, "pod-a")
	for name, mut := range map[string]func(*gapstate.Event){
		"no reason":   func(e *gapstate.Event) { e.Reason = "" },
		"no by":       func(e *gapstate.Event) { e.By = "" },
		"bad state":   func(e *gapstate.Event) { e.State = "covered" },
		"empty range": func(e *gapstate.Event) { e.Range.End = e.Range.Start },
		"no time":     func(e *gapstate.Event) { e.At = time.Time{} },
		"bad id":      func(e *gapstate.Event) { e.ID = "../x" },
	} {
		bad := randomEvent(rng, "pod-a")
		mut(&bad)
		err := s.AppendStates(ctx, []gapstate.Event{good, bad})
		if !errors.Is(err, gapstate.ErrInvalidEvent) {
			t.Fatalf("%s: AppendStates = %v, want gapstate.ErrInvalidEvent", name, err)
		}
	}
	stateModel{}.check(t, "after refused appends", s, durable.Filter{})
}

func testStatesHostile(t *testing.T, h Harness) {
	s := statesOf(t, h.New(t)(t))
	m := stateModel{}
	texts := []string{`'; DROP TABLE x; --`, "line one\nline two\ttabbed", `"quoted" \ back\slash`, "ünïcode ✓", strings.Repeat("r", gapstate.MaxReasonLen)}
	names := []string{"a/b", "..", "sink with spaces", "x?y#z", "ünïcode"}
	var batch []gapstate.Event
	for i, text := range texts {
		e := gapstate.Event{
			ID:          fmt.Sprintf("hostile-%d", i),
			Destination: coverage.Destination{Sink: names[i%len(names)], Topic: "t/" + names[(i+1)%len(names)], Partition: int32(i)},
			Range:       coverage.Range{Start: uint64(i), End: coverage.MaxBatchEnd},
			State:       gapstate.Waived,
			Reason:      text,
			By:          names[(i+2)%len(names)],
			At:          stateBase.Add(time.Duration(i) * time.Microsecond),
		}
		batch = append(batch, e)
		m[e.ID] = e
	}
	if err := s.AppendStates(ctx, batch); err != nil {
		t.Fatal(err)
	}
	m.check(t, "hostile text", s, durable.Filter{})
	for _, e := range batch {
		m.check(t, "hostile text by sink", s, durable.Filter{Sink: e.Destination.Sink})
	}
}
