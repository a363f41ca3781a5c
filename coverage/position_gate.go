package coverage

import (
	"context"
	"fmt"
	"sync"
)

// PositionGate is what every durable PositionStore checks before any I/O,
// in one piece: the configured sources' regimes (only Stored sources'
// positions are kept) and whether the store is closed.
type PositionGate struct {
	regimes map[string]Regime

	mu     sync.Mutex
	closed bool
}

// NewPositionGate checks the sources (each named once, with a regime) and
// returns their gate.
func NewPositionGate(sources []Source) (*PositionGate, error) {
	regimes, err := SourceRegimes(sources)
	if err != nil {
		return nil, err
	}
	return &PositionGate{regimes: regimes}, nil
}

// Check refuses a call on a cancelled ctx, for a source whose positions
// are not kept, or after Close; its error is an *Error naming op and the
// source's partition.
func (g *PositionGate) Check(ctx context.Context, op, source string, partition int32) error {
	if err := CheckPositionCall(ctx, g.regimes, op, source, partition); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return DestinationError(op, positionDest(source, partition), ErrClosed)
	}
	return nil
}

// CheckSave is Check for a save of pos, which must also be valid, reach no
// batch past MaxBatchEnd (no coverage range reaches it) and carry a cursor
// of at most maxCursor bytes.
func (g *PositionGate) CheckSave(ctx context.Context, pos Position, maxCursor int) error {
	const op = "save position"
	if err := g.Check(ctx, op, pos.Source, pos.Partition); err != nil {
		return err
	}
	dest := positionDest(pos.Source, pos.Partition)
	if err := pos.Validate(); err != nil {
		return DestinationError(op, dest, err)
	}
	switch {
	case len(pos.Cursor) > maxCursor:
		return DestinationError(op, dest, fmt.Errorf("%w: cursor of %d bytes, past %d", ErrInvalidPosition, len(pos.Cursor), maxCursor))
	case pos.Batch > MaxBatchEnd:
		return DestinationError(op, dest, fmt.Errorf("%w: batch %d past %d: no coverage range reaches it", ErrInvalidPosition, pos.Batch, uint64(MaxBatchEnd)))
	}
	return nil
}

// Close closes the gate: every later Check fails with ErrClosed. It
// reports whether this call closed it (false: it was closed already).
func (g *PositionGate) Close() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	first := !g.closed
	g.closed = true
	return first
}
