package sim

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/memstates"
)

// openStates finds the gap states' store: the durable tier's own where it
// keeps them (durable.StatesOf), else one in memory beside it, the same
// for the pods and the checks; the pods' view is behind faults of its own.
func (w *world) openStates() {
	truth, err := durable.StatesOf(w.truth)
	if err != nil {
		truth = memstates.New()
		w.note("gap states: in memory beside the %s tier, which keeps none itself", w.cfg.Durable)
	}
	faulty, err := durable.StatesOf(w.table)
	if err != nil {
		faulty = truth
	}
	w.statesTruth, w.states = truth, &faultStates{StateStore: faulty, f: w.f}
	w.refuses, w.rawLost = map[coverage.Destination]*coverage.RangeSet{}, map[coverage.Destination]*coverage.RangeSet{}
	w.clock = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
}

// now is the decisions' clock: strictly increasing by a microsecond (what
// the tiers keep) per call, so that the latest decision is the one made
// last, whatever the machine's clock does.
func (w *world) now() time.Time {
	w.clock = w.clock.Add(time.Microsecond)
	return w.clock
}

var errStatesDown = errors.New("sim: injected gap state store fault")

// drawStateRates draws the gap state store's faults from a stream of the
// seed's own, as drawTierRates does.
func drawStateRates(seed uint64, rates *Rates) {
	r := rand.New(rand.NewPCG(seed, 0x57a7))
	p := func(max float64) float64 {
		if r.IntN(4) == 0 {
			return 0
		}
		return r.Float64() * max
	}
	rates.StateAppend, rates.StateAppendLost, rates.StateRead = p(0.2), p(0.2), p(0.1)
}

// faultStates is a state store behind faults: an append refused before it
// reaches the store (nothing written), an append applied whose answer is
// lost, a read that fails. It draws from the faults' state stream.
type faultStates struct {
	durable.StateStore
	f *faults
}

func (s *faultStates) AppendStates(ctx context.Context, events []gapstate.Event) error {
	if s.f.draw(s.f.stateRnd, "states append refused", s.f.rates.StateAppend) {
		return fmt.Errorf("append %d gap states: %w", len(events), errors.Join(errStatesDown, errors.New("dial tcp: connect: connection refused")))
	}
	if err := s.StateStore.AppendStates(ctx, events); err != nil {
		return err
	}
	if s.f.draw(s.f.stateRnd, "states append landed, answer lost", s.f.rates.StateAppendLost) {
		return fmt.Errorf("append %d gap states: outcome unknown: %w", len(events), errors.Join(errStatesDown, errors.New("unexpected EOF")))
	}
	return nil
}

func (s *faultStates) States(ctx context.Context, f durable.Filter) ([]gapstate.Event, error) {
	if s.f.draw(s.f.stateRnd, "states read failed", s.f.rates.StateRead) {
		return nil, fmt.Errorf("read gap states: %w", errors.Join(errStatesDown, errors.New("read tcp: connection reset by peer")))
	}
	return s.StateStore.States(ctx, f)
}

// noStates hides a tier's gap states: the gaps as they are without any.
type noStates struct{ durable.Tier }
