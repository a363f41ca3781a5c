package recovery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/testseed"
)

// stateTier is a mapTier that keeps gap states.
type stateTier struct {
	*mapTier
	events []gapstate.Event
}

func (s *stateTier) AppendStates(_ context.Context, events []gapstate.Event) error {
	if err := durable.ValidateStates(events); err != nil {
		return err
	}
	s.events = append(s.events, events...)
	return nil
}

func (s *stateTier) States(_ context.Context, f durable.Filter) ([]gapstate.Event, error) {
	var out []gapstate.Event
	for _, e := range s.events {
		if f.Match(e.Destination) {
			out = append(out, e)
		}
	}
	return out, nil
}

// TestStatesHoldGapsOutOfThePlan: with random coverage and random gap
// states, the plan's tasks and the held gaps split the gaps without states
// exactly (no batch lost, none counted twice), no task holds a batch in a
// state, and every held gap has the kind Resolve gives it.
func TestStatesHoldGapsOutOfThePlan(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 37))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for round := range 300 {
		all := map[coverage.Destination]*coverage.RangeSet{}
		for _, sink := range []string{"raw", "lake", "search"} {
			for p := range int32(2) {
				var set coverage.RangeSet
				for range 1 + rng.IntN(5) {
					s := uint64(rng.IntN(200))
					_ = set.Add(coverage.Range{Start: s, End: s + 1 + uint64(rng.IntN(40))})
				}
				all[coverage.Destination{Sink: sink, Topic: "orders", Partition: p}] = &set
			}
		}
		var events []gapstate.Event
		for i := range rng.IntN(8) {
			s := uint64(rng.IntN(220))
			events = append(events, gapstate.Event{
				ID:          fmt.Sprintf("e%d", i),
				Destination: coverage.Destination{Sink: []string{"raw", "lake", "search"}[rng.IntN(3)], Topic: "orders", Partition: int32(rng.IntN(2))},
				Range:       coverage.Range{Start: s, End: s + 1 + uint64(rng.IntN(60))},
				State:       gapstate.States[rng.IntN(len(gapstate.States))],
				Reason:      "r", By: "op", At: at.Add(time.Duration(rng.IntN(20)) * time.Second),
			})
		}
		plain, err := CommittedGaps(ctx, newMapTier(all), GapsFilter{})
		if err != nil {
			t.Fatal(err)
		}
		tier := &stateTier{mapTier: newMapTier(all), events: events}
		got, err := CommittedGaps(ctx, tier, GapsFilter{All: true})
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := Plan(ctx, tier, PlanOptions{MaxTasks: -1, MaxBatches: 1 << 62})
		if err != nil {
			t.Fatal(err)
		}
		want, have := map[coverage.Destination]*coverage.RangeSet{}, map[coverage.Destination]*coverage.RangeSet{}
		add := func(m map[coverage.Destination]*coverage.RangeSet, g Gap) {
			d := coverage.Destination{Sink: g.Sink, Topic: g.Topic, Partition: g.Partition}
			if m[d] == nil {
				m[d] = new(coverage.RangeSet)
			}
			r := coverage.Range{Start: g.Start, End: g.End}
			if m[d].ContainsRange(r) || overlaps(m[d], r) {
				t.Fatalf("round %d: %v %v listed twice (seed %d)", round, d, r, seed)
			}
			_ = m[d].Add(r)
		}
		for _, g := range plain {
			add(want, g)
		}
		for _, g := range got {
			add(have, g)
			d := coverage.Destination{Sink: g.Sink, Topic: g.Topic, Partition: g.Partition}
			if g.Kind.Held() {
				spans := gapstate.Resolve(d, "raw", events, all[d])
				if !inSpan(spans, g) {
					t.Fatalf("round %d: held gap %+v is not in a span of its kind %+v (seed %d)", round, g, spans, seed)
				}
			}
		}
		for d, set := range want {
			if !set.Equal(have[d]) {
				t.Fatalf("round %d: %v: gaps with states %v, without %v: states changed what is missing (seed %d)", round, d, have[d], set, seed)
			}
		}
		// Resume holds the same gaps out of an owner's replay work.
		tps := []TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "orders", Partition: 1}}
		resumed, err := ResumePartitions(ctx, tier, tps, ResumeOptions{Sinks: []string{"lake", "search"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, as := range resumed {
			for _, a := range as {
				if a.Kind != KindReplay {
					continue
				}
				var split coverage.RangeSet
				for _, r := range a.Replay {
					_ = split.Add(r)
					tasks = append(tasks, Task{Destination: a.Destination, Range: r, Kind: KindReplay})
				}
				for _, g := range a.Held {
					_ = split.Add(coverage.Range{Start: g.Start, End: g.End})
				}
				if w := want[a.Destination]; (w == nil && !split.IsEmpty()) || (w != nil && !w.Equal(&split)) {
					t.Fatalf("round %d: Resume of %v: replay and held %v, the gaps without states %v (seed %d)", round, a.Destination, split.String(), w, seed)
				}
			}
		}
		for _, task := range tasks {
			if task.Kind != KindReplay {
				continue
			}
			spans := gapstate.Resolve(task.Destination, "raw", events, all[task.Destination])
			for _, s := range spans {
				if s.Range.Start < task.Range.End && task.Range.Start < s.Range.End {
					t.Fatalf("round %d: task %v %v replays batches %s (%v) (seed %d)", round, task.Destination, task.Range, s.Event.State, s.Range, seed)
				}
			}
		}
	}
}

func overlaps(s *coverage.RangeSet, r coverage.Range) bool {
	for x := range s.All() {
		if x.Start < r.End && r.Start < x.End {
			return true
		}
	}
	return false
}

func inSpan(spans []gapstate.Span, g Gap) bool {
	for _, s := range spans {
		if s.Range.Start <= g.Start && g.End <= s.Range.End && TaskKind(s.Event.State) == g.Kind && s.Event.ID == g.Decision.Event {
			return true
		}
	}
	return false
}
