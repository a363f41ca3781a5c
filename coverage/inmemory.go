package coverage

import (
	"context"
	"maps"
	"slices"
	"sync"
)

// InMemory is a Store held in memory (InMemoryCoverage in docs/design.md): the
// reference backend for tests and for pipelines that keep coverage elsewhere.
// It is safe for concurrent use. The zero value is not usable; call
// NewInMemory.
type InMemory struct {
	mu     sync.RWMutex
	sets   map[Destination]*RangeSet
	closed bool
}

var _ Store = (*InMemory)(nil)

// NewInMemory returns an empty store.
func NewInMemory() *InMemory {
	return &InMemory{sets: make(map[Destination]*RangeSet)}
}

// Record implements Store.
func (m *InMemory) Record(ctx context.Context, d Destination, r Range) error {
	if err := ValidateRecord(d, r); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return NewError("record", d, r, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return NewError("record", d, r, ErrClosed)
	}
	set := m.sets[d]
	if set == nil {
		set = new(RangeSet)
		m.sets[d] = set
	}
	return NewError("record", d, r, set.Add(r))
}

// Covered implements Store.
func (m *InMemory) Covered(ctx context.Context, d Destination) (RangeSet, error) {
	if err := d.Validate(); err != nil {
		return RangeSet{}, DestinationError("covered", d, err)
	}
	if err := ctx.Err(); err != nil {
		return RangeSet{}, DestinationError("covered", d, err)
	}
	// Clone marks the set shared, a write: take the lock exclusively.
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return RangeSet{}, DestinationError("covered", d, ErrClosed)
	}
	if set := m.sets[d]; set != nil {
		return set.Clone(), nil
	}
	return RangeSet{}, nil
}

// Destinations implements Store.
func (m *InMemory) Destinations(ctx context.Context) ([]Destination, error) {
	if err := ctx.Err(); err != nil {
		return nil, StoreError("destinations", err)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, StoreError("destinations", ErrClosed)
	}
	return slices.SortedFunc(maps.Keys(m.sets), Destination.Compare), nil
}

// Close implements Store.
func (m *InMemory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
