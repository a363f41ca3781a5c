// Package backoff is the waiting between retries that the durable tiers
// share: a capped exponential with full jitter, and a sleep that ends
// early with its context.
//
// The invariant it serves: a retry loop never outlives its context, so a
// caller's deadline bounds every wait.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// FullJitter is the wait before retry attempt n (from 1): a random time
// below minimum doubled per attempt, capped at maximum. Full jitter
// spreads writers that failed together, so they do not retry together.
func FullJitter(attempt int, minimum, maximum time.Duration) time.Duration {
	d := maximum
	if attempt >= 1 && attempt < 30 {
		d = min(d, minimum<<(attempt-1))
	}
	if d <= 0 {
		return 0
	}
	return rand.N(d)
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
