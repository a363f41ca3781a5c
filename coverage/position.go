package coverage

import (
	"bytes"
	"context"
	"fmt"
	"slices"
)

// Regime says who holds a source's position. It is a property of the
// source's configuration, not of its transport: Kafka with a consumer group
// is broker-managed, Kafka with manual assignment is stored.
type Regime int

const (
	// BrokerManaged sources (a Kafka consumer group, a Pulsar subscription)
	// keep their position in the broker, which redelivers what is
	// unacknowledged. Nothing is stored here: a parallel copy could disagree
	// with the authoritative one.
	BrokerManaged Regime = iota + 1
	// Stored sources (batch file sets, Arrow IPC and Flight streams, table
	// shares, REST and WSS) have no broker-side position; their cursor is
	// persisted here.
	Stored
)

func (r Regime) String() string {
	switch r {
	case BrokerManaged:
		return "broker-managed"
	case Stored:
		return "stored"
	}
	return fmt.Sprintf("Regime(%d)", int(r))
}

// Source is a source as configuration declares it.
type Source struct {
	Name   string
	Regime Regime
}

// Validate reports an empty name or an undeclared regime.
func (s Source) Validate() error {
	if err := validateName("source", s.Name); err != nil {
		return err
	}
	if s.Regime != BrokerManaged && s.Regime != Stored {
		return fmt.Errorf("%w: source %q declares no regime (broker-managed or stored)", ErrInvalidPosition, s.Name)
	}
	return nil
}

// Position is a stored source position: an opaque cursor that resumes the
// source right after raw batch Batch, the last raw batch id it covers.
type Position struct {
	Source    string `json:"source"`
	Partition int32  `json:"partition"`
	Cursor    []byte `json:"cursor"`
	Batch     uint64 `json:"batch"`
}

// RawDestination is the destination whose raw coverage bounds p: the
// source's topic and partition as written to rawSink.
func (p Position) RawDestination(rawSink string) Destination {
	return Destination{Sink: rawSink, Topic: p.Source, Partition: p.Partition}
}

// Validate reports a position without a cursor or with an invalid source or
// partition.
func (p Position) Validate() error {
	if err := validateName("source", p.Source); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidPosition, err)
	}
	if p.Partition < 0 {
		return fmt.Errorf("%w: partition %d is negative", ErrInvalidPosition, p.Partition)
	}
	if len(p.Cursor) == 0 {
		return fmt.Errorf("%w: empty cursor", ErrInvalidPosition)
	}
	return nil
}

// PositionStore keeps stored source positions. Saving appends: positions
// from concurrent owners are all kept (union, never last-write-wins), and
// ResumePosition chooses among them against raw's coverage. Implementations
// are safe for concurrent use and return *Error values.
type PositionStore interface {
	// SavePosition stores p. Call it only after raw durably holds every batch
	// up to p.Batch. A source that is not configured fails with
	// ErrUnknownSource, a broker-managed one with ErrBrokerManaged; nothing
	// is stored then.
	SavePosition(ctx context.Context, p Position) error

	// Positions returns every position stored for the source's partition,
	// ordered by Batch then Cursor. A broker-managed or unknown source fails
	// as in SavePosition.
	Positions(ctx context.Context, source string, partition int32) ([]Position, error)

	// Close releases the store; later calls fail with ErrClosed.
	Close() error
}

// PositionBatcher is the optional capability of a PositionStore that saves
// many positions in fewer writes than one SavePosition each (one object per
// source, one transaction, one commit). A checkpoint saves its buffered
// positions through SavePositions, which uses it when the store has it.
type PositionBatcher interface {
	// SavePositions saves every position of ps as SavePosition saves one,
	// under the same rules (union with what concurrent owners save, a
	// retry adds nothing, a refused position stores nothing), and returns
	// one error per position, in ps's order, nil for a saved one. A
	// position refused whatever happens (ErrUnknownSource,
	// ErrBrokerManaged, ErrInvalidPosition) fails alone; a failed write
	// fails the positions it carried, which may then have been saved
	// (a lag to retry, never a lead).
	SavePositions(ctx context.Context, ps []Position) []error
}

// SavePositions saves ps in s: in one SavePositions call where s is a
// PositionBatcher, else one SavePosition each. It returns one error per
// position, in ps's order, nil for a saved one.
func SavePositions(ctx context.Context, s PositionStore, ps []Position) []error {
	if b, ok := s.(PositionBatcher); ok {
		errs := b.SavePositions(ctx, ps)
		if len(errs) == len(ps) {
			return errs
		}
		// A broken store: no position is reported saved on its word.
		err := fmt.Errorf("%w: the position store answered %d outcomes for %d positions", ErrUnavailable, len(errs), len(ps))
		errs = make([]error, len(ps))
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = s.SavePosition(ctx, p)
	}
	return errs
}

// ResumePosition returns the position to resume a stored source's partition
// from: among the stored positions, the one with the greatest Batch that
// raw's coverage reaches without a gap from raw's first covered batch. A
// position beyond a raw gap is never returned, even if an owner wrote it: it
// leads raw and resuming from it would skip the gap for good. ok is false
// when no position is safe; the source then starts from its beginning.
//
// Raw's first covered batch stands for the start of the source: batch ids are
// expected to be dense from there. Coverage only grows, so a position once
// safe stays safe, except when a write lands below raw's first covered batch
// after the resolution; give a partition's first batch to one owner.
func ResumePosition(ctx context.Context, positions PositionStore, cov Store, rawSink, source string, partition int32) (p Position, ok bool, err error) {
	stored, err := positions.Positions(ctx, source, partition)
	if err != nil {
		return Position{}, false, err
	}
	raw, err := cov.Covered(ctx, Destination{Sink: rawSink, Topic: source, Partition: partition})
	if err != nil {
		return Position{}, false, err
	}
	best, ok := SafePosition(stored, &raw)
	return best, ok, nil
}

// SafePosition is the pure rule behind ResumePosition: the position with the
// greatest Batch below the end of raw's first covered range, ties broken by
// the greatest cursor so that the answer does not depend on storage order.
func SafePosition(stored []Position, raw *RangeSet) (Position, bool) {
	first, ok := raw.First()
	if !ok {
		return Position{}, false
	}
	var best Position
	found := false
	for _, p := range stored {
		if p.Batch >= first.End {
			continue
		}
		if !found || p.Batch > best.Batch || (p.Batch == best.Batch && bytes.Compare(p.Cursor, best.Cursor) > 0) {
			best, found = p, true
		}
	}
	if found {
		best.Cursor = slices.Clone(best.Cursor)
	}
	return best, found
}
