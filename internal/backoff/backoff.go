// Package backoff is the one schedule of waiting between retries that the
// durable tiers and the checkpoint loop share: a capped exponential
// (Exponential), with full jitter (FullJitter) or equal jitter
// (EqualJitter), and a sleep that ends early with its context.
//
// The invariant it serves: a retry loop never outlives its context, so a
// caller's deadline bounds every wait.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Exponential is the wait before retry attempt n (from 1): minimum doubled
// per attempt after the first, capped at maximum (however large: it never wraps). Attempts below 1
// wait minimum, and a minimum of zero or less never waits. A pure function, so a
// schedule is testable without sleeping.
func Exponential(attempt int, minimum, maximum time.Duration) time.Duration {
	if minimum <= 0 {
		return 0
	}
	d := minimum
	for i := 1; i < attempt && d < maximum; i++ {
		if d > maximum/2 {
			// Doubling would pass the cap, or wrap past the largest
			// duration to zero or below: a tight retry loop.
			return maximum
		}
		d *= 2
	}
	return min(d, maximum)
}

// FullJitter is the wait before retry attempt n (from 1): a random time
// below Exponential's. Full jitter spreads writers that failed together, so
// they do not retry together. An attempt below 1 waits up to maximum.
func FullJitter(attempt int, minimum, maximum time.Duration) time.Duration {
	d := maximum
	if attempt >= 1 {
		d = Exponential(attempt, minimum, maximum)
	}
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// EqualJitter is the wait before retry attempt n (from 1): at least half of
// Exponential's, plus a random time up to the other half. It keeps a floor
// under each wait where a retry sooner is known to be futile (a catalog
// that just refused a commit), and still spreads the writers.
func EqualJitter(attempt int, minimum, maximum time.Duration) time.Duration {
	d := Exponential(attempt, minimum, maximum)
	return d/2 + rand.N(d/2+1)
}

// Sleep waits d, or until ctx ends, then returning its error.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
