package recovery

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/testseed"
)

// TestPlanHeldAgreesWithCommittedGaps: over random coverage and states,
// PlanHeld (from a tier) and PlanCoverageHeld (from coverage read) return
// the same tasks and held gaps, the held gaps are exactly CommittedGaps'
// gaps of a held kind (waived with All), and the tasks are Plan's.
func TestPlanHeldAgreesWithCommittedGaps(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 38))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sinks := []string{"raw", "lake", "search"}
	for round := range 200 {
		all := map[coverage.Destination]*coverage.RangeSet{}
		for _, sink := range sinks {
			for p := range int32(2) {
				var set coverage.RangeSet
				for range 1 + rng.IntN(4) {
					s := uint64(rng.IntN(150))
					_ = set.Add(coverage.Range{Start: s, End: s + 1 + uint64(rng.IntN(30))})
				}
				all[coverage.Destination{Sink: sink, Topic: "orders", Partition: p}] = &set
			}
		}
		var events []gapstate.Event
		for i := range rng.IntN(8) {
			s := uint64(rng.IntN(170))
			events = append(events, gapstate.Event{
				ID:          fmt.Sprintf("e%d", i),
				Destination: coverage.Destination{Sink: sinks[rng.IntN(3)], Topic: "orders", Partition: int32(rng.IntN(2))},
				Range:       coverage.Range{Start: s, End: s + 1 + uint64(rng.IntN(50))},
				State:       gapstate.States[rng.IntN(len(gapstate.States))],
				Reason:      "r", By: "op", At: at.Add(time.Duration(rng.IntN(10)) * time.Second),
			})
		}
		opts := PlanOptions{MaxTasks: -1, MaxBatches: 1 << 62}
		tier := &stateTier{mapTier: newMapTier(all), events: events}
		tasks, held, err := PlanHeld(ctx, tier, opts)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := Plan(ctx, tier, opts)
		if err != nil {
			t.Fatal(err)
		}
		opts.EnsureDefaults()
		opts.States = events
		ctasks, cheld, err := PlanCoverageHeld(all, opts)
		if err != nil {
			t.Fatal(err)
		}
		gaps, err := CommittedGaps(ctx, tier, GapsFilter{All: true})
		if err != nil {
			t.Fatal(err)
		}
		var want []Gap
		for _, g := range gaps {
			if g.Kind.Held() {
				want = append(want, g)
			}
		}
		switch {
		case !reflect.DeepEqual(tasks, plan):
			t.Fatalf("round %d: PlanHeld's tasks %v, Plan's %v (seed %d)", round, tasks, plan, seed)
		case !reflect.DeepEqual(tasks, ctasks) || !reflect.DeepEqual(held, cheld):
			t.Fatalf("round %d: PlanHeld %v %v, PlanCoverageHeld %v %v (seed %d)", round, tasks, held, ctasks, cheld, seed)
		case !reflect.DeepEqual(held, want):
			t.Fatalf("round %d: held %v, CommittedGaps' held kinds %v (seed %d)", round, held, want, seed)
		}
	}
}
