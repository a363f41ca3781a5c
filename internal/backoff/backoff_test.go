package backoff

import (
	"context"
	"errors"
	"math"
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

// TestExponentialSchedule: the wait doubles from the minimum per attempt
// and stops at the maximum, without overflowing on huge attempts.
func TestExponentialSchedule(t *testing.T) {
	var got []time.Duration
	for attempt := range 7 {
		got = append(got, Exponential(attempt, 10*time.Millisecond, 100*time.Millisecond))
	}
	want := []time.Duration{10, 10, 20, 40, 80, 100, 100}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("schedule %v, want %v ms", got, want)
		}
	}
	if d := Exponential(1<<62, time.Millisecond, time.Hour); d != time.Hour {
		t.Fatalf("huge attempt: %v, want the maximum", d)
	}
	if d := Exponential(5, 0, time.Hour); d != 0 {
		t.Fatalf("zero minimum: %v", d)
	}
}

// TestEqualJitterBounds: every wait lies in [half, all] of the attempt's
// exponential wait.
func TestEqualJitterBounds(t *testing.T) {
	const lo, hi = 100 * time.Millisecond, 5 * time.Second
	for attempt := 1; attempt <= 10; attempt++ {
		d := Exponential(attempt, lo, hi)
		for range 200 {
			if w := EqualJitter(attempt, lo, hi); w < d/2 || w > d {
				t.Fatalf("attempt %d: wait %v outside [%v, %v]", attempt, w, d/2, d)
			}
		}
	}
}

// TestHugeMaximumNeverWraps: a maximum meaning "no cap" (MaxInt64, which
// the tiers' options accept) keeps every wait at or above the minimum and
// at or below the maximum: doubling past 2^63 must not wrap to zero or
// below, a tight retry loop.
func TestHugeMaximumNeverWraps(t *testing.T) {
	for _, maximum := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64/2 + 1, 3 * time.Millisecond} {
		for attempt := 1; attempt <= 200; attempt++ {
			d := Exponential(attempt, 2*time.Millisecond, maximum)
			if d < min(2*time.Millisecond, maximum) || d > maximum {
				t.Fatalf("Exponential(%d, 2ms, %d) = %v: outside [min, max]", attempt, maximum, d)
			}
		}
	}
	positive := 0
	for range 100 {
		if FullJitter(44, 2*time.Millisecond, math.MaxInt64) > 0 {
			positive++
		}
	}
	if positive == 0 {
		t.Error("FullJitter(44, 2ms, MaxInt64) is always 0: every late retry runs at once")
	}
}
