package postgres

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/recovery"
)

// TestStatesAgreeWithThePlanner: in a fresh schema per round, random
// checkpoints (hostile sink and topic names among them) and random gap
// states appended through the tier (every state, events of the reference,
// ties in At broken by IDs that differ in case and punctuation, retried
// appends): PostgreSQL's gaps, with each piece's kind and deciding event,
// are exactly the planner's over the same tier (CommittedGaps with All),
// under random filters and references.
func TestStatesAgreeWithThePlanner(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 37))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sinks := []string{"raw", "lake", `o'brien"; drop table x; --`}
	topics := []string{"orders", `it's'; select 1; --`}
	idChars := []byte("aAbB-_zZ09")
	for round := range 4 {
		tier := openTier(t, freshSchema(t))
		var dests []coverage.Destination
		for i := range 1 + r.IntN(6) {
			var rows []coverage.DestinationRanges
			for range 1 + r.IntN(4) {
				d := coverage.Destination{Sink: sinks[r.IntN(len(sinks))], Topic: topics[r.IntN(len(topics))], Partition: int32(r.IntN(2))}
				dests = append(dests, d)
				dr := coverage.DestinationRanges{Destination: d}
				for range 1 + r.IntN(4) {
					s := r.Uint64N(200)
					dr.Ranges = append(dr.Ranges, coverage.Range{Start: s, End: s + 1 + r.Uint64N(30)})
				}
				rows = append(rows, dr)
			}
			if err := tier.Append(ctx, durable.Checkpoint{Name: fmt.Sprintf("pod/%d", i), Writer: "pod", Ranges: rows}); err != nil {
				t.Fatal(err)
			}
		}
		var events []gapstate.Event
		used := map[string]bool{}
		for range r.IntN(20) {
			var id []byte
			for len(id) == 0 || used[string(id)] {
				id = append(id, idChars[r.IntN(len(idChars))])
			}
			used[string(id)] = true
			d := dests[r.IntN(len(dests))]
			if r.IntN(3) == 0 {
				d.Sink = sinks[r.IntN(len(sinks))]
			}
			s := r.Uint64N(220)
			events = append(events, gapstate.Event{ID: string(id), Destination: d,
				Range: coverage.Range{Start: s, End: s + 1 + r.Uint64N(40)},
				State: gapstate.States[r.IntN(len(gapstate.States))], Reason: "r", By: "op",
				At: at.Add(time.Duration(r.IntN(4)) * time.Second)})
		}
		for len(events) > 0 {
			n := 1 + r.IntN(len(events))
			if err := tier.AppendStates(ctx, events[:n]); err != nil {
				t.Fatal(err)
			}
			if r.IntN(2) == 0 { // a retry after an unknown outcome
				if err := tier.AppendStates(ctx, events[:n]); err != nil {
					t.Fatal(err)
				}
			}
			events = events[n:]
		}
		all, err := tier.States(ctx, durable.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		for q := range 6 {
			p := QueryParams{Reference: "raw"}
			if r.IntN(4) == 0 {
				p.Reference = "lake"
			}
			if r.IntN(3) == 0 {
				p.Sink = sinks[r.IntN(len(sinks))]
			}
			if r.IntN(3) == 0 {
				p.Topic = topics[r.IntN(len(topics))]
			}
			if r.IntN(3) == 0 {
				part := int32(r.IntN(2))
				p.Partition = &part
			}
			where := fmt.Sprintf("seed %d round %d query %d, params %+v, events %+v", seed, round, q, p, all)
			planned, perr := recovery.CommittedGaps(ctx, tier, recovery.GapsFilter{Reference: p.Reference, Sink: p.Sink, Topic: p.Topic, Partition: p.Partition, All: true})
			res, err := tier.Query(ctx, "gaps", p)
			if errors.Is(perr, recovery.ErrNoReference) || errors.Is(err, recovery.ErrNoReference) {
				continue
			}
			if perr != nil || err != nil {
				t.Fatalf("%s: planner: %v; PostgreSQL: %v", where, perr, err)
			}
			var want, got []string
			for _, g := range planned {
				ev := ""
				if g.Decision != nil {
					ev = g.Decision.Event
				}
				want = append(want, fmt.Sprintf("%q %q %d [%d,%d) %s %q", g.Sink, g.Topic, g.Partition, g.Start, g.End, g.Kind, ev))
			}
			for _, v := range res.Rows {
				sink, _ := v[0].(string)
				topic, _ := v[1].(string)
				part, _ := v[2].(int32)
				start, _ := v[3].(int64)
				end, _ := v[4].(int64)
				kind, _ := v[5].(string)
				ev, _ := v[6].(string)
				got = append(got, fmt.Sprintf("%q %q %d [%d,%d) %s %q", sink, topic, part, start, end, kind, ev))
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s:\nPostgreSQL %q\nplanner    %q", where, got, want)
			}
		}
	}
}
