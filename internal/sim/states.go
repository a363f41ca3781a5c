package sim

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/demo"
	"github.com/covmirror/covmirror/internal/memstates"
	"github.com/covmirror/covmirror/recovery"
)

// stateStep is a gap state decided at random, through the faulty store: a
// sink starts refusing a range it lacks for ever (recorded now, as a
// pipeline's output would, or left for the recovery worker to meet), raw
// loses a range some sink lacks (recorded by raw's retention job, or left
// likewise), an operator waives a refused or unrecoverable gap, or reopens
// a held gap, having fixed the sink or restored raw, or not. Recording a
// state must leave coverage as it was.
func (w *world) stateStep(ctx context.Context) error {
	before, err := w.truth.Coverage(ctx, durable.Filter{})
	if err != nil {
		return fmt.Errorf("reading the durable tier without faults: %w", err)
	}
	part := int32(w.r.IntN(int(w.p.Partitions)))
	switch w.r.IntN(4) {
	case 0:
		s := w.p.Sinks[w.r.IntN(len(w.p.Sinks))]
		d := w.p.Destination(part).WithSink(s.Name)
		if r, ok := w.pickMissing(d, s); ok {
			addTo(w.refuses, d, r)
			w.decide(ctx, "sink refuses", d, r, gapstate.Refused, "400: the row violates a constraint (simulated)", w.pod.name)
		}
	case 1:
		d := w.p.Destination(part)
		if r, ok := w.pickMissing(d, w.p.Sinks...); ok {
			addTo(w.rawLost, d, r)
			w.decide(ctx, "raw loses", d, r, gapstate.Unrecoverable, "raw's retention expired them (simulated)", "raw-retention")
		}
	default:
		waive := w.r.IntN(2) == 0
		gaps, err := recovery.CommittedGaps(ctx, memstates.With(noStates{w.truth}, w.statesTruth), w.gapsFilter(!waive))
		if err != nil {
			w.note("states: gaps: %v", err)
			return nil
		}
		gaps = slices.DeleteFunc(gaps, func(g recovery.Gap) bool { return !g.Kind.Held() || waive && g.Kind == recovery.KindWaived })
		if len(gaps) == 0 {
			w.note("states: no held gap to waive or reopen")
			return nil
		}
		g := gaps[w.r.IntN(len(gaps))]
		d, r := gapDest(g), w.subRange(coverage.Range{Start: g.Start, End: g.End})
		if waive {
			w.forceDecide(ctx, "operator waives", d, r, gapstate.Waived, "accepted: the batches were test data (simulated)")
			break
		}
		if w.r.IntN(2) == 0 {
			removeFrom(w.refuses, d, r)
			removeFrom(w.rawLost, w.p.Destination(d.Partition), r)
			w.note("operator fixes the sink and restores raw for %s %s", d, r)
		}
		w.forceDecide(ctx, "operator reopens", d, r, gapstate.Reopened, "fixed (simulated)")
	}
	after, err := w.truth.Coverage(ctx, durable.Filter{})
	if err != nil {
		return fmt.Errorf("reading the durable tier without faults: %w", err)
	}
	for _, d := range destinations(before, after) {
		if !orEmpty(before[d]).Equal(orEmpty(after[d])) {
			return fmt.Errorf("%w: recording a gap state changed the coverage of %s from %s to %s", demo.ErrLeads, d, orEmpty(before[d]), orEmpty(after[d]))
		}
	}
	return nil
}

// decide records a decision now, half the time; otherwise the recovery
// worker meets it when it replays.
func (w *world) decide(ctx context.Context, what string, d coverage.Destination, r coverage.Range, state gapstate.State, reason, by string) {
	if w.r.IntN(2) == 0 {
		w.note("%s %s %s: left for the recovery worker to find", what, d, r)
		return
	}
	err := w.states.AppendStates(ctx, []gapstate.Event{w.event(d, r, state, reason, by)})
	w.res.Ops["states: "+string(state)]++
	w.note("%s %s %s: recorded %s: %v", what, d, r, state, errText(err))
}

// forceDecide is an operator's decision, through the faulty store.
func (w *world) forceDecide(ctx context.Context, what string, d coverage.Destination, r coverage.Range, state gapstate.State, reason string) {
	err := w.states.AppendStates(ctx, []gapstate.Event{w.event(d, r, state, reason, "operator")})
	w.res.Ops["states: "+string(state)]++
	w.note("%s %s %s: %v", what, d, r, errText(err))
}

func (w *world) event(d coverage.Destination, r coverage.Range, state gapstate.State, reason, by string) gapstate.Event {
	return gapstate.Event{ID: gapstate.NewID(), Destination: d, Range: r, State: state, Reason: reason, By: by, At: w.now()}
}

// pickMissing is a random stretch of d's partition that raw holds and one
// of the sinks does not (truly, in the store, not as recorded).
func (w *world) pickMissing(d coverage.Destination, sinks ...*demo.Store) (coverage.Range, bool) {
	var missing coverage.RangeSet
	for _, s := range sinks {
		lacks := coverage.Gaps(w.p.Raw.Holds(d), s.Holds(d))
		for r := range lacks.All() {
			_ = missing.Add(r)
		}
	}
	ranges := missing.Ranges()
	if len(ranges) == 0 {
		w.note("states: nothing missing of %s", d)
		return coverage.Range{}, false
	}
	return w.subRange(ranges[w.r.IntN(len(ranges))]), true
}

// subRange is a random non-empty stretch of r.
func (w *world) subRange(r coverage.Range) coverage.Range {
	n := r.End - r.Start
	a := r.Start + w.r.Uint64N(n)
	return coverage.Range{Start: a, End: a + 1 + w.r.Uint64N(r.End-a)}
}

func (w *world) gapsFilter(all bool) recovery.GapsFilter {
	return recovery.GapsFilter{Sinks: w.p.SinkNames(), Extents: w.extents(), All: all}
}

// checkStates is the gap states' invariant, against the tier and the
// states without faults: no batch a sink refuses is covered; the held
// gaps and the gaps to replay are exactly the gaps without states (every
// missing batch still listed, none twice); no replay task holds a batch in
// a state.
func (w *world) checkStates(ctx context.Context, committed map[coverage.Destination]*coverage.RangeSet) error {
	for _, d := range destinations(w.refuses) {
		if c := committed[d]; c != nil {
			if both := coverage.Gaps(w.refuses[d], ptr(coverage.Gaps(w.refuses[d], c))); !both.IsEmpty() {
				return fmt.Errorf("%w: the durable tier covers %s of %s, which the sink refuses for ever", demo.ErrLeads, both.String(), d)
			}
		}
	}
	events, err := w.statesTruth.States(ctx, durable.Filter{})
	if err != nil {
		return fmt.Errorf("reading the gap states without faults: %w", err)
	}
	plain, err := recovery.CommittedGaps(ctx, noStates{w.truth}, w.gapsFilter(false))
	if errors.Is(err, recovery.ErrNoReference) {
		return nil // raw's records all lost: the plan says so, nothing to compare
	}
	if err != nil {
		return fmt.Errorf("the gaps without states: %w", err)
	}
	held, err := recovery.CommittedGaps(ctx, memstates.With(noStates{w.truth}, w.statesTruth), w.gapsFilter(true))
	if err != nil {
		return fmt.Errorf("the gaps with states: %w", err)
	}
	want, have := map[coverage.Destination]*coverage.RangeSet{}, map[coverage.Destination]*coverage.RangeSet{}
	for _, g := range plain {
		addTo(want, gapDest(g), coverage.Range{Start: g.Start, End: g.End})
	}
	for _, g := range held {
		r := coverage.Range{Start: g.Start, End: g.End}
		one := mustSet(r)
		if s := have[gapDest(g)]; s != nil && !ptr(coverage.Gaps(&one, s)).Equal(&one) {
			return fmt.Errorf("CommittedGaps lists %s of %s twice", r, gapDest(g))
		}
		addTo(have, gapDest(g), r)
	}
	for _, d := range destinations(want, have) {
		if !orEmpty(want[d]).Equal(orEmpty(have[d])) {
			return fmt.Errorf("with gap states CommittedGaps lists %s missing of %s, without %s: a state hid or invented a gap", orEmpty(have[d]), d, orEmpty(want[d]))
		}
	}
	tasks, err := recovery.PlanCoverage(committed, recovery.PlanOptions{Reference: coverage.RawSink, MaxBatches: 1 << 62, MaxTasks: -1,
		Sinks: w.p.SinkNames(), Extents: w.extents(), States: events})
	if err != nil {
		return fmt.Errorf("the plan with states: %w", err)
	}
	spans := map[coverage.Destination][]gapstate.Span{}
	for _, t := range tasks {
		if t.Kind != recovery.KindReplay {
			continue
		}
		s, ok := spans[t.Destination]
		if !ok {
			s = gapstate.Resolve(t.Destination, coverage.RawSink, events, committed[t.Destination])
			spans[t.Destination] = s
		}
		for _, span := range s {
			if span.Range.Start < t.Range.End && t.Range.Start < span.Range.End {
				return fmt.Errorf("the plan replays %s of %s, which is %s (%s)", t.Range, t.Destination, span.Event.State, span.Range)
			}
		}
	}
	return nil
}

// fixAndReopen, with faults off, is the operator fixing every sink and
// restoring raw, then reopening every held gap: recovery must then close
// them all.
func (w *world) fixAndReopen(ctx context.Context) error {
	clear(w.refuses)
	clear(w.rawLost)
	gaps, err := recovery.CommittedGaps(ctx, memstates.With(noStates{w.truth}, w.statesTruth), w.gapsFilter(true))
	if err != nil && !errors.Is(err, recovery.ErrNoReference) {
		return fmt.Errorf("the gaps with faults off: %w", err)
	}
	var events []gapstate.Event
	for _, g := range gaps {
		if g.Kind.Held() {
			events = append(events, w.event(gapDest(g), coverage.Range{Start: g.Start, End: g.End}, gapstate.Reopened, "fixed (simulated)", "operator"))
		}
	}
	// Every decision is reopened too, not only today's held gaps: raw's
	// loss of batches that are still a hole in raw's own coverage holds
	// the sinks' gaps there only once raw's hole is verified, later.
	decided, err := w.statesTruth.States(ctx, durable.Filter{})
	if err != nil {
		return fmt.Errorf("reading the decisions with faults off: %w", err)
	}
	for _, e := range decided {
		if e.State != gapstate.Reopened {
			events = append(events, w.event(e.Destination, e.Range, gapstate.Reopened, "fixed (simulated)", "operator"))
		}
	}
	for len(events) > 0 {
		n := min(len(events), 1000)
		if err := w.statesTruth.AppendStates(ctx, events[:n]); err != nil {
			return fmt.Errorf("reopening with faults off: %w", err)
		}
		events = events[n:]
	}
	w.note("operator fixes every sink, restores raw and reopens %d held gaps", len(gaps))
	return nil
}

// checkNoneHeld: once everything was reopened and recovered, no gap is
// held.
func (w *world) checkNoneHeld(ctx context.Context) error {
	gaps, err := recovery.CommittedGaps(ctx, memstates.With(noStates{w.truth}, w.statesTruth), w.gapsFilter(true))
	if err != nil {
		return fmt.Errorf("the gaps after recovery: %w", err)
	}
	for _, g := range gaps {
		if g.Kind.Held() {
			return fmt.Errorf("after every state was reopened and recovery ran, %s %s [%d,%d) is still %s", g.Sink, g.Topic, g.Start, g.End, g.Kind)
		}
	}
	return nil
}

func addTo(m map[coverage.Destination]*coverage.RangeSet, d coverage.Destination, r coverage.Range) {
	if m[d] == nil {
		m[d] = new(coverage.RangeSet)
	}
	_ = m[d].Add(r) // the ranges come from valid sets
}

func removeFrom(m map[coverage.Destination]*coverage.RangeSet, d coverage.Destination, r coverage.Range) {
	if m[d] != nil {
		left := coverage.Gaps(m[d], ptr(mustSet(r)))
		m[d] = &left
	}
}

func mustSet(r coverage.Range) coverage.RangeSet {
	s, _ := coverage.NewRangeSet(r) // callers pass valid ranges
	return s
}

func ptr(s coverage.RangeSet) *coverage.RangeSet { return &s }

func orEmpty(s *coverage.RangeSet) *coverage.RangeSet {
	if s == nil {
		return new(coverage.RangeSet)
	}
	return s
}

// destinations is the destinations of the maps, in order.
func destinations(maps ...map[coverage.Destination]*coverage.RangeSet) []coverage.Destination {
	var out []coverage.Destination
	for _, m := range maps {
		for d := range m {
			out = append(out, d)
		}
	}
	slices.SortFunc(out, coverage.Destination.Compare)
	return slices.Compact(out)
}

func gapDest(g recovery.Gap) coverage.Destination {
	return coverage.Destination{Sink: g.Sink, Topic: g.Topic, Partition: g.Partition}
}
