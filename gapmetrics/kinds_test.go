package gapmetrics

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// eventSet is a StateStore keeping events as a set by ID, as every tier
// does (durable/durabletest checks the tiers; this checks the counting).
type eventSet struct {
	mu     sync.Mutex
	events map[string]gapstate.Event
	fail   error
}

func (s *eventSet) AppendStates(_ context.Context, events []gapstate.Event) error {
	if err := durable.ValidateStates(events); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range events {
		if _, ok := s.events[e.ID]; !ok {
			s.events[e.ID] = e
		}
	}
	return nil
}

func (s *eventSet) States(_ context.Context, f durable.Filter) ([]gapstate.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	var out []gapstate.Event
	for _, e := range s.events {
		if f.Match(e.Destination) {
			out = append(out, e)
		}
	}
	return out, nil
}

// kindModel counts, batch by batch, what each sink's gaps are: for every
// batch raw covers and the sink does not, the latest event about it (the
// sink's own, or raw's except a refusal) decides its kind, none or a
// reopen leaving it to replay; a gap is a run of batches of one decision.
func kindModel(cov map[coverage.Destination]*coverage.RangeSet, events []gapstate.Event, sinks []string, parts int32, limit uint64) map[string]SinkGaps {
	out := map[string]SinkGaps{}
	for _, sink := range sinks[1:] {
		var s SinkGaps
		for p := range parts {
			d := coverage.Destination{Sink: sink, Topic: "orders", Partition: p}
			ref := cov[d.WithSink("raw")]
			prev := "-"
			for b := range limit {
				if ref == nil || !ref.Contains(b) || cov[d] != nil && cov[d].Contains(b) {
					prev = "-"
					continue
				}
				var latest *gapstate.Event
				for i := range events {
					e := &events[i]
					about := e.Destination == d || e.Destination == d.WithSink("raw") && e.State != gapstate.Refused
					if about && e.Start <= b && b < e.End && (latest == nil || e.Later(latest)) {
						latest = e
					}
				}
				key, c := "replay", (*Held)(nil)
				if latest != nil && latest.State != gapstate.Reopened {
					key = latest.ID
					c = map[gapstate.State]*Held{gapstate.Refused: &s.Refused, gapstate.Unrecoverable: &s.Unrecoverable, gapstate.Waived: &s.Waived}[latest.State]
				}
				fresh := key != prev
				prev = key
				if c == nil {
					s.MissingBatches++
					if fresh {
						s.Gaps++
					}
					continue
				}
				c.MissingBatches++
				if fresh {
					c.Gaps++
				}
			}
		}
		out[sink] = s
	}
	return out
}

// TestGapMetricsCountByKind: a real table with random coverage and random
// gap states; every sink's counts by kind equal the batch-by-batch model,
// the exported series say the same, and more coverage over a state clears
// it (coverage always wins). A failed read of the states fails the refresh.
func TestGapMetricsCountByKind(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 37))
	sinks := []string{"raw", "lake", "search"}
	const parts, limit = 2, 120
	tbl := tabletest.EmbeddedTable(t)
	cov := map[coverage.Destination]*coverage.RangeSet{}
	commit := func(name string) {
		var drs []coverage.DestinationRanges
		for _, sink := range sinks {
			for p := range int32(parts) {
				d := coverage.Destination{Sink: sink, Topic: "orders", Partition: p}
				s := uint64(rng.IntN(limit - 10))
				r := rg(s, s+1+uint64(rng.IntN(limit-int(s)-1)))
				if sink == "raw" && cov[d] == nil {
					r = rg(0, limit/2+uint64(rng.IntN(limit/2))) // raw holds most
				}
				drs = append(drs, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{r}})
				if cov[d] == nil {
					cov[d] = new(coverage.RangeSet)
				}
				_ = cov[d].Add(r)
			}
		}
		if err := tbl.Append(ctx, durable.Checkpoint{Name: name, Writer: "test", Ranges: drs}); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	store := &eventSet{events: map[string]gapstate.Event{}}
	g, err := New(Options{Table: tbl, States: store})
	if err != nil {
		t.Fatal(err)
	}
	commit("c0")
	for round := range 24 {
		if round == 12 {
			commit("c1") // coverage over some states: it wins
		}
		var events []gapstate.Event
		for i := range 1 + rng.IntN(6) {
			s := uint64(rng.IntN(limit))
			events = append(events, gapstate.Event{
				ID:          fmt.Sprintf("r%d-%d", round, i),
				Destination: coverage.Destination{Sink: sinks[rng.IntN(len(sinks))], Topic: "orders", Partition: int32(rng.IntN(parts))},
				Range:       rg(s, s+1+uint64(rng.IntN(40))),
				State:       gapstate.States[rng.IntN(len(gapstate.States))],
				Reason:      "test", By: "op", At: at.Add(time.Duration(rng.IntN(30)) * time.Second),
			})
		}
		if err := store.AppendStates(ctx, events); err != nil {
			t.Fatal(err)
		}
		if err := g.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		all, _ := store.States(ctx, durable.Filter{})
		want := kindModel(cov, all, sinks, parts, limit)
		got := g.Sinks()
		v := metricValues(t, g)
		for _, sink := range sinks[1:] {
			w, h := want[sink], got[sink]
			h.OldestSince = time.Time{}
			if w != h {
				t.Fatalf("round %d: %s: counts %+v, model %+v (seed %d)", round, sink, h, w, seed)
			}
			for kind, c := range map[string]Held{"refused": w.Refused, "unrecoverable": w.Unrecoverable, "waived": w.Waived, "": {w.Gaps, w.MissingBatches}} {
				key := "{" + sink + "}"
				if kind != "" {
					key += "{" + kind + "}"
				}
				if v["covmirror_sink_gaps"+key] != float64(c.Gaps) || v["covmirror_sink_missing_batches"+key] != float64(c.MissingBatches) {
					t.Fatalf("round %d: series %s: %v gaps, %v batches, want %+v (seed %d)", round, key,
						v["covmirror_sink_gaps"+key], v["covmirror_sink_missing_batches"+key], c, seed)
				}
			}
		}
		if _, ok := v["covmirror_sink_gaps{raw}{refused}"]; ok {
			t.Fatalf("the reference exports held kinds: %v", v)
		}
	}
	store.fail = errDown
	if err := g.Refresh(ctx); err == nil {
		t.Fatal("a refresh whose states cannot be read succeeded")
	}
}
