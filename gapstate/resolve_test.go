package gapstate

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/testseed"
)

const universe = 64

var (
	sink = coverage.Destination{Sink: "lake", Topic: "orders", Partition: 3}
	raw  = coverage.Destination{Sink: "raw", Topic: "orders", Partition: 3}
)

// modelState is the state of batch b by the rule itself: the latest
// relevant decision holding b, unless it is a reopen or b is covered.
func modelState(b uint64, events []Event, covered *coverage.RangeSet) (State, string) {
	var best *Event
	for i := range events {
		e := &events[i]
		relevant := e.Destination == sink || (e.Destination == raw && e.State != Refused)
		if !relevant || !e.Range.Contains(b) {
			continue
		}
		if best == nil || e.Later(best) {
			best = e
		}
	}
	if best == nil || best.State == Reopened || covered.Contains(b) {
		return "", ""
	}
	return best.State, best.ID
}

func randomEvents(rng *rand.Rand) []Event {
	var out []Event
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range rng.IntN(12) {
		s := uint64(rng.IntN(universe - 1))
		e := Event{
			ID:          fmt.Sprintf("e%02d", rng.IntN(40)),
			Destination: sink,
			Range:       coverage.Range{Start: s, End: s + 1 + uint64(rng.IntN(universe-int(s)))},
			State:       States[rng.IntN(len(States))],
			Reason:      "r",
			By:          "t",
			At:          base.Add(time.Duration(rng.IntN(5)) * time.Second), // ties: ID decides
		}
		switch rng.IntN(4) {
		case 0:
			e.Destination = raw
		case 1:
			e.Destination.Partition = 4 // another destination: ignored
		}
		if len(out) > 0 && rng.IntN(6) == 0 {
			e = out[rng.IntN(len(out))] // a duplicate, as a retried write leaves
		}
		out = append(out, e)
	}
	return dedupe(out)
}

// dedupe keeps the first event of each ID, as a tier keeping one copy per
// ID does; two different events never share an ID in a tier.
func dedupe(events []Event) []Event {
	seen := map[string]bool{}
	var out []Event
	for _, e := range events {
		if !seen[e.ID] {
			seen[e.ID] = true
			out = append(out, e)
		}
	}
	return out
}

func randomSet(rng *rand.Rand, n int) coverage.RangeSet {
	var s coverage.RangeSet
	for range rng.IntN(n) {
		a := uint64(rng.IntN(universe - 1))
		_ = s.Add(coverage.Range{Start: a, End: a + 1 + uint64(rng.IntN(8))})
	}
	return s
}

func TestResolveAgainstModel(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 37))
	for round := range 3000 {
		events := randomEvents(rng)
		covered := randomSet(rng, 4)
		gaps := randomSet(rng, 6)
		spans := Resolve(sink, "raw", events, &covered)
		got := make([]string, universe+8)
		for i, s := range spans {
			if s.Range.Validate() != nil {
				t.Fatalf("round %d: invalid span %v (seed %d)", round, s.Range, seed)
			}
			if i > 0 && spans[i-1].Range.End > s.Range.Start {
				t.Fatalf("round %d: spans overlap or are out of order: %v then %v (seed %d)", round, spans[i-1].Range, s.Range, seed)
			}
			if s.Event.State == Reopened {
				t.Fatalf("round %d: a reopened span %v (seed %d)", round, s.Range, seed)
			}
			for b := s.Range.Start; b < s.Range.End; b++ {
				got[b] = string(s.Event.State) + "/" + s.Event.ID
			}
		}
		for b := uint64(0); b < universe+8; b++ {
			st, id := modelState(b, events, &covered)
			want := ""
			if st != "" {
				want = string(st) + "/" + id
			}
			if got[b] != want {
				t.Fatalf("round %d: batch %d resolves to %q, the model says %q (seed %d)\nevents %+v\ncovered %v",
					round, b, got[b], want, seed, events, covered.String())
			}
		}
		pieces := Classify(&gaps, spans)
		var union coverage.RangeSet
		for i, p := range pieces {
			if i > 0 && pieces[i-1].Range.End > p.Range.Start {
				t.Fatalf("round %d: pieces overlap: %v then %v (seed %d)", round, pieces[i-1].Range, p.Range, seed)
			}
			if err := union.Add(p.Range); err != nil {
				t.Fatalf("round %d: %v (seed %d)", round, err, seed)
			}
			for b := p.Range.Start; b < p.Range.End; b++ {
				st, _ := modelState(b, events, &covered)
				if covered.Contains(b) {
					st = "" // a gap over covered batches is the caller's, not a state's
				}
				if p.State != st {
					t.Fatalf("round %d: gap batch %d classified %q, the model says %q (seed %d)", round, b, p.State, st, seed)
				}
			}
		}
		if !union.Equal(&gaps) {
			t.Fatalf("round %d: pieces %v do not add up to the gaps %v (seed %d)", round, union.String(), gaps.String(), seed)
		}
	}
}

func TestCoverageWins(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := []Event{{ID: "a", Destination: sink, Range: coverage.Range{Start: 0, End: 10}, State: Refused, Reason: "400", By: "pod", At: at}}
	covered, _ := coverage.NewRangeSet(coverage.Range{Start: 3, End: 5})
	spans := Resolve(sink, "raw", ev, &covered)
	if len(spans) != 2 || spans[0].Range != (coverage.Range{Start: 0, End: 3}) || spans[1].Range != (coverage.Range{Start: 5, End: 10}) {
		t.Fatalf("refused [0,10) with [3,5) covered resolves to %+v; want [0,3) and [5,10)", spans)
	}
}

func TestValidate(t *testing.T) {
	good := Event{ID: NewID(), Destination: sink, Range: coverage.Range{Start: 1, End: 2}, State: Waived, Reason: "accepted\nby the owner", By: "ops@example", At: time.Now()}
	if err := good.Validate(); err != nil {
		t.Fatalf("a good event: %v", err)
	}
	for name, mut := range map[string]func(*Event){
		"no reason":      func(e *Event) { e.Reason = "  " },
		"long reason":    func(e *Event) { e.Reason = string(make([]byte, MaxReasonLen+1)) },
		"control reason": func(e *Event) { e.Reason = "a\x1b[31m" },
		"no by":          func(e *Event) { e.By = "" },
		"newline by":     func(e *Event) { e.By = "a\nb" },
		"zero time":      func(e *Event) { e.At = time.Time{} },
		"bad state":      func(e *Event) { e.State = "covered" },
		"bad id":         func(e *Event) { e.ID = "a/b" },
		"empty range":    func(e *Event) { e.Range = coverage.Range{Start: 2, End: 2} },
		"bad sink":       func(e *Event) { e.Destination.Sink = "" },
	} {
		e := good
		mut(&e)
		if err := e.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestEventJSONIsFlat(t *testing.T) {
	e := Event{ID: "a", Destination: sink, Range: coverage.Range{Start: 1, End: 2}, State: Refused, Reason: "400", By: "pod-0", At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"a","sink":"lake","topic":"orders","partition":3,"start":1,"end":2,"state":"refused","reason":"400","by":"pod-0","at":"2026-01-01T00:00:00Z"}`
	if string(b) != want {
		t.Fatalf("event JSON\n%s\nwant\n%s", b, want)
	}
	var back Event
	if err := json.Unmarshal(b, &back); err != nil || back != e {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}
