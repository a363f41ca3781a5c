package compaction

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/covmirror/covmirror/internal/backoff"
)

// RunEvery runs run now and then once per every, each start moved by up to
// ±jitter×every (NextRun), until ctx ends; a failed run is logged and the
// next one runs on schedule, since scheduled maintenance that stopped at
// its first failure would leave small files and snapshots to pile up. It
// returns nil when ctx ends, between runs or as a run returns, and an
// error, running nothing, for an interval that is not positive.
func RunEvery(ctx context.Context, every time.Duration, jitter float64, logger *slog.Logger, run func(context.Context) error) error {
	if every <= 0 {
		return fmt.Errorf("compaction: a schedule needs a positive interval, not %s", every)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	for {
		start := time.Now()
		if err := run(ctx); err != nil && ctx.Err() == nil {
			logger.Error("scheduled run failed; the next one runs on schedule", "err", err, "next_in", every)
		}
		if ctx.Err() != nil {
			return nil
		}
		if backoff.Sleep(ctx, max(time.Until(NextRun(start, every, jitter, rand.Float64())), 0)) != nil {
			return nil
		}
	}
}
