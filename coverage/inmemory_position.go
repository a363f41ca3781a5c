package coverage

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
)

// InMemoryPositions is a PositionStore held in memory, configured with the
// sources it serves. It is safe for concurrent use.
type InMemoryPositions struct {
	sources map[string]Regime

	mu        sync.Mutex
	positions map[positionKey][]Position // sorted by Batch then Cursor, no duplicates
	closed    bool
}

type positionKey struct {
	source    string
	partition int32
}

var _ PositionStore = (*InMemoryPositions)(nil)

// NewInMemoryPositions returns an empty store for the given sources. Every
// source must have a name and a regime, and names must be unique.
func NewInMemoryPositions(sources ...Source) (*InMemoryPositions, error) {
	regimes, err := SourceRegimes(sources)
	if err != nil {
		return nil, err
	}
	return &InMemoryPositions{sources: regimes, positions: make(map[positionKey][]Position)}, nil
}

// SourceRegimes validates a source configuration and indexes it by name.
func SourceRegimes(sources []Source) (map[string]Regime, error) {
	regimes := make(map[string]Regime, len(sources))
	for _, s := range sources {
		if err := s.Validate(); err != nil {
			return nil, StoreError("configure sources", err)
		}
		if _, dup := regimes[s.Name]; dup {
			return nil, StoreError("configure sources", fmt.Errorf("%w: source %q is declared twice", ErrInvalidPosition, s.Name))
		}
		regimes[s.Name] = s.Regime
	}
	return regimes, nil
}

// CheckStoredSource reports whether positions of source may be kept, given
// the configured regimes: ErrUnknownSource or ErrBrokerManaged if not.
func CheckStoredSource(regimes map[string]Regime, source string) error {
	switch regimes[source] {
	case Stored:
		return nil
	case BrokerManaged:
		return fmt.Errorf("%w: source %q is broker-managed; commit its position to the broker instead", ErrBrokerManaged, source)
	}
	return fmt.Errorf("%w: source %q is not configured; declare it with its regime (stored or broker-managed)", ErrUnknownSource, source)
}

// ComparePositions orders positions by Batch, then Cursor.
func ComparePositions(a, b Position) int {
	if c := cmp.Compare(a.Batch, b.Batch); c != 0 {
		return c
	}
	return bytes.Compare(a.Cursor, b.Cursor)
}

// SavePosition implements PositionStore.
func (m *InMemoryPositions) SavePosition(ctx context.Context, p Position) error {
	if err := m.check(ctx, "save position", p.Source, p.Partition); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return DestinationError("save position", positionDest(p.Source, p.Partition), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return DestinationError("save position", positionDest(p.Source, p.Partition), ErrClosed)
	}
	p.Cursor = slices.Clone(p.Cursor)
	key := positionKey{p.Source, p.Partition}
	list := m.positions[key]
	i, found := slices.BinarySearchFunc(list, p, ComparePositions)
	if !found {
		m.positions[key] = slices.Insert(list, i, p)
	}
	return nil
}

// Positions implements PositionStore.
func (m *InMemoryPositions) Positions(ctx context.Context, source string, partition int32) ([]Position, error) {
	if err := m.check(ctx, "positions", source, partition); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, DestinationError("positions", positionDest(source, partition), ErrClosed)
	}
	list := m.positions[positionKey{source, partition}]
	out := make([]Position, len(list))
	for i, p := range list {
		p.Cursor = slices.Clone(p.Cursor)
		out[i] = p
	}
	return out, nil
}

func (m *InMemoryPositions) check(ctx context.Context, op, source string, partition int32) error {
	return CheckPositionCall(ctx, m.sources, op, source, partition)
}

// CheckPositionCall is what every PositionStore checks before any I/O: a
// live ctx, and a source whose positions are kept (CheckStoredSource). Its
// error is an *Error naming op and the source's partition.
func CheckPositionCall(ctx context.Context, regimes map[string]Regime, op, source string, partition int32) error {
	if err := ctx.Err(); err != nil {
		return DestinationError(op, positionDest(source, partition), err)
	}
	if err := CheckStoredSource(regimes, source); err != nil {
		return DestinationError(op, positionDest(source, partition), err)
	}
	return nil
}

// positionDest names a source's partition in errors, with the sink left empty.
func positionDest(source string, partition int32) Destination {
	return Destination{Topic: source, Partition: partition}
}

// Close implements PositionStore.
func (m *InMemoryPositions) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
