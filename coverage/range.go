package coverage

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Range is the half-open interval [Start, End) of batch ids. A valid Range
// has End > Start; the empty and the inverted range are invalid, so a Range
// always names at least one batch. Batch id math.MaxUint64 cannot be covered,
// since End is exclusive.
type Range struct {
	Start uint64 `json:"start"`
	End   uint64 `json:"end"`
}

// RangeOf returns the range of count batches starting at start. It fails with
// ErrInvalidRange when count is zero or start+count overflows.
func RangeOf(start, count uint64) (Range, error) {
	if count == 0 {
		return Range{}, fmt.Errorf("%w: a range of zero batches starting at %d", ErrInvalidRange, start)
	}
	if start > math.MaxUint64-count {
		return Range{}, fmt.Errorf("%w: %d batches starting at %d overflow uint64", ErrInvalidRange, count, start)
	}
	return Range{Start: start, End: start + count}, nil
}

// ParseRange parses "START:END" (or "START-END"), the half-open form the
// command line uses.
func ParseRange(s string) (Range, error) {
	startText, endText, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		startText, endText, ok = strings.Cut(strings.TrimSpace(s), "-")
	}
	if !ok {
		return Range{}, fmt.Errorf("%w: %q is not START:END (half-open, e.g. 1:6 for batches 1 to 5)", ErrInvalidRange, s)
	}
	start, err := strconv.ParseUint(strings.TrimSpace(startText), 10, 64)
	if err != nil {
		return Range{}, fmt.Errorf("%w: start of %q: %v", ErrInvalidRange, s, err)
	}
	end, err := strconv.ParseUint(strings.TrimSpace(endText), 10, 64)
	if err != nil {
		return Range{}, fmt.Errorf("%w: end of %q: %v", ErrInvalidRange, s, err)
	}
	r := Range{Start: start, End: end}
	if err := r.Validate(); err != nil {
		return Range{}, err
	}
	return r, nil
}

// Validate reports ErrInvalidRange for an empty or inverted range.
func (r Range) Validate() error {
	if r.End == r.Start {
		return fmt.Errorf("%w: %s is empty (ranges are half-open: [n,n+1) covers batch n)", ErrInvalidRange, r)
	}
	if r.End < r.Start {
		return fmt.Errorf("%w: %s is inverted (end must be greater than start)", ErrInvalidRange, r)
	}
	return nil
}

// Len is the number of batches in r; zero for an invalid range.
func (r Range) Len() uint64 {
	if r.End <= r.Start {
		return 0
	}
	return r.End - r.Start
}

// Contains reports whether batch id b lies in r.
func (r Range) Contains(b uint64) bool { return r.Start <= b && b < r.End }

// String formats r as "[start,end)".
func (r Range) String() string {
	return "[" + strconv.FormatUint(r.Start, 10) + "," + strconv.FormatUint(r.End, 10) + ")"
}

// AddSaturating is a+b, or math.MaxUint64 where the sum would wrap: a
// count of batches that wrapped would show a huge loss as a small
// one.
func AddSaturating(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}
