package coverage

import (
	"cmp"
	"slices"
)

// Normalize returns ranges in the form a RangeSet holds them: sorted by
// start, overlapping and touching ranges joined, invalid (empty or
// inverted) ranges dropped, as RangeSet.Add refuses them. It builds no
// tree, so it suits the many small lists of one checkpoint. When ranges
// are already in that form it returns them as they are, without a copy:
// the caller must not modify the result.
func Normalize(ranges []Range) []Range {
	if IsNormalized(ranges) {
		return ranges
	}
	out := make([]Range, 0, len(ranges))
	for _, r := range ranges {
		if r.End > r.Start {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Range) int { return cmp.Compare(a.Start, b.Start) })
	n := 0
	for _, r := range out {
		if n > 0 && out[n-1].End >= r.Start {
			out[n-1].End = max(out[n-1].End, r.End)
			continue
		}
		out[n] = r
		n++
	}
	return out[:n:n]
}

// IsNormalized reports whether ranges are valid, ascending and neither
// overlap nor touch: what Normalize returns.
func IsNormalized(ranges []Range) bool {
	for i, r := range ranges {
		if r.End <= r.Start || (i > 0 && ranges[i-1].End >= r.Start) {
			return false
		}
	}
	return true
}
