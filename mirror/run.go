package mirror

import (
	"context"
	"errors"
	"time"

	"github.com/covmirror/covmirror/internal/backoff"
)

// Run checkpoints every Interval until ctx is done, then returns nil (a
// cancelled context is how Run is stopped, not an error). A failed
// checkpoint is logged and retried with capped exponential backoff; records
// keep landing in the local tier meanwhile and the next success carries
// them all. Close runs the final checkpoint.
func (m *Mirror) Run(ctx context.Context) error {
	wait := m.opts.Interval
	for {
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-timer.C:
		}
		err := m.Sync(ctx)
		switch {
		case err == nil:
			wait = m.opts.Interval
		case errors.Is(err, context.Canceled) && ctx.Err() != nil:
			return nil
		default:
			wait = NextBackoff(m.opts.Interval, m.opts.MaxBackoff, m.stats.failuresInARow())
			m.opts.Logger.Error("coverage checkpoint failed; ranges stay pending in the local tier",
				"err", err, "retry_in", wait.String(), "consecutive_failures", m.stats.failuresInARow())
		}
	}
}

// NextBackoff is the wait before the next checkpoint after failures failed
// ones in a row: Interval/10 doubled per failure, capped at maxBackoff (and
// never below a millisecond), as backoff.Exponential schedules it.
func NextBackoff(interval, maxBackoff time.Duration, failures uint64) time.Duration {
	return backoff.Exponential(int(min(failures, 64)), max(interval/10, time.Millisecond), maxBackoff)
}

func (s *stats) failuresInARow() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.consecutive
}
