package compaction

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestRunEveryGoesOnAfterFailures: a scheduled job runs again after a
// failed run, and stops when its context ends, mid-wait or mid-run.
func TestRunEveryGoesOnAfterFailures(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var runs atomic.Int32
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := RunEvery(ctx, time.Millisecond, 0.5, nil, func(context.Context) error {
			if runs.Add(1) >= 5 {
				cancel()
			}
			return errors.New("every run fails")
		}); err != nil {
			t.Error(err)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("RunEvery did not return after its context ended")
	}
	if n := runs.Load(); n != 5 {
		t.Fatalf("%d runs, want 5: a failed run must not stop the schedule, and a cancelled one must", n)
	}
}

// TestRunEveryRefusesANonPositiveInterval: a zero interval would run back
// to back; it is refused and nothing runs.
func TestRunEveryRefusesANonPositiveInterval(t *testing.T) {
	for _, every := range []time.Duration{0, -time.Second} {
		err := RunEvery(context.Background(), every, 0, nil, func(context.Context) error {
			t.Fatal("ran on a non-positive interval")
			return nil
		})
		if err == nil {
			t.Fatalf("interval %s accepted", every)
		}
	}
}
