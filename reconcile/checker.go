package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// Checker asks one sink which batch ids it really holds.
type Checker interface {
	// Held reports which batch ids of ranges the sink holds for d. Every id
	// of the result lies inside ranges; a checker that sees one outside
	// returns an error wrapping ErrOutOfRange instead. An error means
	// nothing is known, never that the batches are absent.
	Held(ctx context.Context, d coverage.Destination, ranges []coverage.Range) (*coverage.RangeSet, error)
}

// Counter is a sink that can only count: how many distinct batch ids of r
// it holds for d. A count above r's length is an error (ErrOutOfRange).
// Distinct matters: an at-least-once sink holds some batches twice, and a
// count of rows (SQL's COUNT(*)) over the duplicates reaches r's length with
// batches missing, hiding their absence; count COUNT(DISTINCT batch_id).
type Counter interface {
	Count(ctx context.Context, d coverage.Destination, r coverage.Range) (uint64, error)
}

// Counting adapts a Counter to a Checker. A range whose count equals its
// length is held; a count below it says some batch of it is absent without
// saying which, so the whole range is reported held by nothing and becomes
// claimed-absent: a replay of batches the sink may hold costs only
// duplicates dedup absorbs, while guessing which are held could leave a loss
// unreplayed.
func Counting(c Counter) Checker { return counting{c} }

type counting struct{ c Counter }

func (c counting) Held(ctx context.Context, d coverage.Destination, ranges []coverage.Range) (*coverage.RangeSet, error) {
	held := new(coverage.RangeSet)
	for _, r := range ranges {
		n, err := c.c.Count(ctx, d, r)
		if err != nil {
			return nil, err
		}
		if n > r.Len() {
			return nil, fmt.Errorf("%w: %d batches counted in %v, which holds %d", ErrOutOfRange, n, r, r.Len())
		}
		if n == r.Len() {
			if err := held.Add(r); err != nil {
				return nil, err
			}
		}
	}
	return held, nil
}

// DefaultTimeout bounds one check of a built-in checker when its options
// leave Timeout zero.
const DefaultTimeout = 30 * time.Second

var (
	// ErrOutOfRange: a checker answered with a batch id outside the range
	// it was asked about, or counted more batches than the range holds. Its
	// answer is not trusted at all.
	ErrOutOfRange = errors.New("sink answered outside the asked range")
	// ErrBadAnswer: a checker's answer could not be read (malformed JSON,
	// an unknown field, a body over the size limit, a non-2xx status, a
	// value of the wrong type).
	ErrBadAnswer = errors.New("sink answered something unreadable")
)

// CheckError is a check of one sink's destination that failed: the report
// then holds no claimed-absent rows of that destination (the sink's others
// are still checked and reported). Err wraps the cause (ErrOutOfRange,
// ErrBadAnswer, context.DeadlineExceeded for a timeout, or the driver's
// error).
type CheckError struct {
	Sink        string
	Destination coverage.Destination
	Ranges      []coverage.Range
	Err         error
}

func (e *CheckError) Error() string {
	return fmt.Sprintf("reconcile: check of sink %q (topic %q, partition %d, %d ranges from %v) failed, so nothing of it is reported absent: %v",
		e.Sink, e.Destination.Topic, e.Destination.Partition, len(e.Ranges), first(e.Ranges), e.Err)
}

func (e *CheckError) Unwrap() error { return e.Err }

func first(rs []coverage.Range) any {
	if len(rs) == 0 {
		return "nothing"
	}
	return rs[0]
}

// askable refuses a range past math.MaxInt64: the SQL and Iceberg sinks
// keep batch ids as signed 64-bit integers.
func askable(r coverage.Range) error {
	if r.End > math.MaxInt64 {
		return fmt.Errorf("range %v reaches past %d, the largest batch id a signed 64-bit column holds", r, int64(math.MaxInt64))
	}
	return nil
}

// heldOf builds the set of ids, refusing any outside ranges.
func heldOf(ids []uint64, ranges []coverage.Range) (*coverage.RangeSet, error) {
	asked, err := coverage.NewRangeSet(ranges...)
	if err != nil {
		return nil, err
	}
	held := new(coverage.RangeSet)
	for _, id := range ids {
		if !asked.Contains(id) {
			return nil, fmt.Errorf("%w: batch id %d is outside %v", ErrOutOfRange, id, asked.String())
		}
		if err := held.Add(coverage.Range{Start: id, End: id + 1}); err != nil {
			return nil, err
		}
	}
	return held, nil
}

// within refuses a held set that reaches outside ranges.
func within(held *coverage.RangeSet, ranges []coverage.Range) error {
	asked, err := coverage.NewRangeSet(ranges...)
	if err != nil {
		return err
	}
	for r := range held.All() {
		if !asked.ContainsRange(r) {
			return fmt.Errorf("%w: held range %v is outside %v", ErrOutOfRange, r, asked.String())
		}
	}
	return nil
}
