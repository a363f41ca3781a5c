// Package memstates is a durable.StateStore in memory, for tests and the
// simulation: it stands beside a tier that keeps no gap states of its own,
// with the contract's semantics (validate all first, one event per ID).
package memstates

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// Store keeps gap state events in memory, one per ID, in the order first
// appended.
type Store struct {
	mu    sync.Mutex
	byID  map[string]gapstate.Event
	order []string
	lose  int
	down  bool
}

// New returns an empty Store.
func New() *Store { return &Store{byID: map[string]gapstate.Event{}} }

// ErrAnswerLost is what an append LoseAnswers armed returns, after it was
// applied.
var ErrAnswerLost = errors.New("memstates: the append was applied and its answer lost (injected)")

// LoseAnswers makes the next n appends apply and then return ErrAnswerLost,
// as a store whose answer a broken connection lost.
func (s *Store) LoseAnswers(n int) {
	s.mu.Lock()
	s.lose = n
	s.mu.Unlock()
}

// ErrDown is what every append returns while SetDown(true) holds.
var ErrDown = errors.New("memstates: the store is unreachable (injected)")

// SetDown makes every append fail with ErrDown, applying nothing, until
// SetDown(false): a durable tier that cannot be reached.
func (s *Store) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// AppendStates implements durable.StateStore.
func (s *Store) AppendStates(_ context.Context, events []gapstate.Event) error {
	if err := durable.ValidateStates(events); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return ErrDown
	}
	for _, e := range events {
		if _, ok := s.byID[e.ID]; !ok {
			s.byID[e.ID] = e
			s.order = append(s.order, e.ID)
		}
	}
	if s.lose > 0 {
		s.lose--
		return ErrAnswerLost
	}
	return nil
}

// States implements durable.StateStore.
func (s *Store) States(_ context.Context, f durable.Filter) ([]gapstate.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []gapstate.Event
	for _, id := range s.order {
		if e := s.byID[id]; f.Match(e.Destination) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Events is every event held, in the order first appended.
func (s *Store) Events() []gapstate.Event {
	out, _ := s.States(context.Background(), durable.Filter{})
	return slices.Clip(out)
}

// Tier is a durable tier with other gap states than its own. It hides the
// tier's optional capabilities (durable.SinkLister and the like).
type Tier struct {
	durable.Tier
	durable.StateStore
}

// With returns t with s as its gap states.
func With(t durable.Tier, s durable.StateStore) *Tier { return &Tier{Tier: t, StateStore: s} }
