package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestFullJitterBounds: every wait is below the attempt's cap, the caps
// double from the minimum up to the maximum, and zero bounds mean no wait.
func TestFullJitterBounds(t *testing.T) {
	const lo, hi = 5 * time.Millisecond, 300 * time.Millisecond
	for attempt := 1; attempt <= 40; attempt++ {
		cap := min(hi, lo<<min(attempt-1, 29))
		for range 200 {
			if d := FullJitter(attempt, lo, hi); d < 0 || d >= cap {
				t.Fatalf("attempt %d: wait %v outside [0, %v)", attempt, d, cap)
			}
		}
	}
	if d := FullJitter(3, 0, 0); d != 0 {
		t.Fatalf("zero bounds: wait %v", d)
	}
}

// TestSleepEndsWithItsContext: a cancelled context ends the wait with its
// error; otherwise the wait runs out.
func TestSleepEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("ran out: %v", err)
	}
}
