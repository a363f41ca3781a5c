package coverage

import (
	"context"
	"errors"
	"fmt"
)

// Store keeps per-destination write coverage (CoverageStore in docs/design.md).
// Implementations are safe for concurrent use, and every method returns an
// *Error whose chain holds one of this package's sentinels, or a context's
// error.
type Store interface {
	// Record unions r into d's coverage. Call it only after the sink has
	// durably acknowledged every batch of r (WriteThenRecord does exactly
	// that); recording earlier is the over-claim the invariant forbids.
	// Recording overlaps what is already covered is harmless, and two
	// writers recording the same destination end with the union of their
	// ranges. An invalid d or r fails with ErrInvalidDestination or
	// ErrInvalidRange and changes nothing. When Record returns an error the
	// range may or may not have been recorded; either is safe, because the
	// write it describes did happen.
	Record(ctx context.Context, d Destination, r Range) error

	// Covered returns d's coverage as an independent set the caller owns.
	// A destination that was never recorded has empty coverage: nothing of
	// it is known to be written, which is the lagging, safe answer.
	Covered(ctx context.Context, d Destination) (RangeSet, error)

	// Destinations lists every destination with recorded coverage, ordered
	// by Destination.Compare.
	Destinations(ctx context.Context) ([]Destination, error)

	// Close releases the store. Later calls fail with ErrClosed; closing
	// twice is not an error.
	Close() error
}

// WriteThenRecord runs a sink write and records its coverage only after the
// write returned nil: never before it and never concurrently with it. A
// failed write is returned unrecorded, which leaves the gap for recovery.
//
// d and r are validated before the write, so that a write is never made that
// could not be recorded. If the write succeeds but recording fails, the
// returned error says so: coverage then lags the sink, which costs a replay
// and loses nothing. Recording is not abandoned when ctx is cancelled after
// the write succeeded: the ack has happened, and dropping its record would
// only add a replay.
func WriteThenRecord(ctx context.Context, s Store, d Destination, r Range, write func(ctx context.Context) error) error {
	if err := ValidateRecord(d, r); err != nil {
		return err
	}
	if err := write(ctx); err != nil {
		return &Error{Op: "write", Destination: d, Range: r, Err: err}
	}
	if err := s.Record(context.WithoutCancel(ctx), d, r); err != nil {
		// The write landed and only its record failed (a lag): say so in
		// Op even where the store already returned an *Error, so a caller
		// can tell this from a failed write.
		var ce *Error
		if errors.As(err, &ce) {
			again := *ce
			again.Op = "record after write"
			return &again
		}
		return &Error{Op: "record after write", Destination: d, Range: r, Err: err}
	}
	return nil
}

// Entry is one range of one destination: the unit RecordAll takes.
type Entry struct {
	Destination Destination
	Range       Range
}

// BatchRecorder is the optional capability of a Store to record many
// entries under one lock and one write, as a Store's Record does for one.
// Implementations validate every entry before recording any, so that bad
// input changes nothing.
type BatchRecorder interface {
	// RecordBatch records entries in order. It returns how many leading
	// entries are recorded as surely as a Record that returned nil (with a
	// store that syncs, on disk) and, when that is not all of them, an
	// error saying why. Entries past the count may or may not be held (a
	// failed write leaves them in memory, as it leaves a Record's): either
	// is safe, and recording them again is harmless. The count never
	// includes an entry whose write failed.
	RecordBatch(ctx context.Context, entries []Entry) (int, error)
}

// RecordAll records entries in s: in one call where s is a BatchRecorder,
// one Record at a time otherwise. Every entry is validated first: an
// invalid one fails the call with the entry's *Error and records nothing.
// The count is how many leading entries are recorded as a Record's nil
// promises; entries past it may or may not be: retrying from it is
// harmless, and with an error it is needed.
func RecordAll(ctx context.Context, s Store, entries []Entry) (int, error) {
	if br, ok := s.(BatchRecorder); ok {
		return br.RecordBatch(ctx, entries) // which validates every entry first
	}
	if err := ValidateEntries(entries); err != nil {
		return 0, err
	}
	for i, e := range entries {
		if err := s.Record(ctx, e.Destination, e.Range); err != nil {
			return i, err
		}
	}
	return len(entries), nil
}

// ValidateEntries checks every entry as Record would, and returns the
// first invalid one's error, naming its index.
func ValidateEntries(entries []Entry) error {
	for i, e := range entries {
		if err := ValidateRecord(e.Destination, e.Range); err != nil {
			return fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return nil
}
