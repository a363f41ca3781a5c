package coverage

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors classify every failure of this package and of its Store
// backends. Test for them with errors.Is; an *Error carries the details.
var (
	// ErrInvalidRange: an empty, inverted or overflowing range. Nothing was
	// recorded; fix the caller.
	ErrInvalidRange = errors.New("invalid range")

	// ErrInvalidDestination: an empty, overlong or non-UTF-8 sink or topic
	// name, or a negative partition. Nothing was recorded; fix the caller.
	ErrInvalidDestination = errors.New("invalid destination")

	// ErrClosed: the store was closed. Open it again to go on.
	ErrClosed = errors.New("store is closed")

	// ErrUnknownSource: a position for a source that is not configured.
	// Declare the source and its regime in the configuration first.
	ErrUnknownSource = errors.New("unknown source")

	// ErrBrokerManaged: a position for a source whose broker holds it (a
	// Kafka consumer group, a Pulsar subscription). Commit it to the broker;
	// a second copy here could disagree with the authoritative one.
	ErrBrokerManaged = errors.New("source position is broker-managed")

	// ErrInvalidPosition: a stored position without a cursor or with an
	// invalid partition.
	ErrInvalidPosition = errors.New("invalid position")

	// ErrCorrupt: a backend's state cannot be read back as written. For the
	// pod-local tier the remedy is to move the directory aside and resume
	// from the durable checkpoint; the error says which directory.
	ErrCorrupt = errors.New("coverage state is corrupt")

	// ErrUnavailable: the backend cannot be reached (a locked directory, an
	// unreachable catalog). Nothing was recorded; retry once it is back.
	ErrUnavailable = errors.New("coverage backend unavailable")
)

// Error is the error every Store method returns (CoverageError in docs/design.md):
// the operation, what it was about, and the cause, which errors.Is matches
// against the sentinels above.
type Error struct {
	Op          string      // the method, e.g. "record", "covered"
	Destination Destination // zero when the operation had none
	Range       Range       // zero when the operation had none
	Err         error       // the cause; one of the sentinels is in its chain
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("coverage: ")
	b.WriteString(e.Op)
	if e.Destination != (Destination{}) {
		b.WriteString(" ")
		b.WriteString(e.Destination.String())
	}
	if e.Range != (Range{}) {
		b.WriteString(" ")
		b.WriteString(e.Range.String())
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// NewError wraps err as an *Error for op on d and r. A nil err gives nil, and
// an err that already is an *Error is returned unchanged, so that wrapping
// layers do not repeat the context.
func NewError(op string, d Destination, r Range, err error) error {
	if err == nil {
		return nil
	}
	var ce *Error
	if errors.As(err, &ce) {
		return err
	}
	return &Error{Op: op, Destination: d, Range: r, Err: err}
}

// MaxBatchEnd is the largest range end a Store accepts. Every durable tier
// keeps batch ids in signed 64-bit columns (Iceberg long, PostgreSQL int8),
// so a range ending past it could be recorded locally but never
// checkpointed; it is refused at the door instead, by every backend alike.
const MaxBatchEnd = 1<<63 - 1

// StoreError is NewError for an operation on the whole store: no
// destination, no range.
func StoreError(op string, err error) error { return NewError(op, Destination{}, Range{}, err) }

// DestinationError is NewError for an operation on one destination as a
// whole: no range.
func DestinationError(op string, d Destination, err error) error {
	return NewError(op, d, Range{}, err)
}

// ValidateRecord checks what Store.Record is given, as every backend must
// before it changes anything: a valid destination and a valid range ending
// at most at MaxBatchEnd.
func ValidateRecord(d Destination, r Range) error {
	if err := d.Validate(); err != nil {
		return NewError("record", d, r, err)
	}
	if err := r.Validate(); err != nil {
		return NewError("record", d, r, err)
	}
	if r.End > MaxBatchEnd {
		return NewError("record", d, r, fmt.Errorf("%w: batch ids past %d do not fit the durable tier's signed 64-bit columns", ErrInvalidRange, uint64(MaxBatchEnd)))
	}
	return nil
}
