package queries

import (
	"testing"
	"time"
)

// TestTimeCellsHaveOneWidth: a column of times lines up whatever their
// fractional seconds (RFC3339Nano drops trailing zeros, so 12:00:00.5 and
// 12:00:00.123456 printed at different widths and shifted the table).
func TestTimeCellsHaveOneWidth(t *testing.T) {
	base := time.Date(2026, 12, 7, 12, 0, 0, 0, time.FixedZone("CET", 3600))
	var width int
	for _, frac := range []time.Duration{0, 500 * time.Millisecond, 123456 * time.Microsecond, 120 * time.Microsecond} {
		cell := cells([]any{base.Add(frac)})[0]
		if width == 0 {
			width = len(cell)
		}
		if len(cell) != width || cell[len(cell)-1] != 'Z' {
			t.Fatalf("time %v printed %q: not UTC at the width of the others (%d)", base.Add(frac), cell, width)
		}
		if back, err := time.Parse(time.RFC3339Nano, cell); err != nil || !back.Equal(base.Add(frac)) {
			t.Fatalf("%q does not read back as %v: %v", cell, base.Add(frac), err)
		}
	}
}
