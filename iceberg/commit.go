package iceberg

import (
	"context"
	"fmt"
	"time"
)

// commitLoop is how every commit of this package lands: data files are
// written once by the caller, then commit runs until it succeeds. A
// conflict (the table moved) is retried at once on the metadata reload
// fetches; any other failure is retried after a capped backoff, and only
// once reload shows that the failed-looking commit did not land after all
// (an answer lost mid-flight). A reload that fails leaves the caller's
// metadata in hand for the next attempt. The loop ends when ctx ends, when
// timeout passes (ErrCommitTimeout), or on an error final says no retry can
// mend.
type commitLoop struct {
	what    string        // names the commit and its table in errors and logs
	timeout time.Duration // Options.CommitTimeout
	commit  func() error
	reload  func() (landed bool, err error)
	final   func(error) bool // optional
}

func (t *Table) run(ctx context.Context, l commitLoop) error {
	deadline := time.Now().Add(l.timeout)
	for attempt := 1; ; attempt++ {
		err := l.commit()
		if err == nil {
			return nil
		}
		if l.final != nil && l.final(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("iceberg: %s: %w", l.what, ctx.Err())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s after %d attempts: %w", ErrCommitTimeout, l.what, attempt, err)
		}
		conflict := isConflict(err)
		t.opts.Logger.Debug("commit retry", "commit", l.what, "attempt", attempt, "conflict", conflict, "err", err)
		// A conflict is retried at once; anything else, and a reload that
		// fails, after a pause.
		paused := false
		if !conflict {
			if err := sleep(ctx, commitBackoff(attempt)); err != nil {
				return err
			}
			paused = true
		}
		landedAnyway, err := l.reload()
		if err != nil {
			if ctx.Err() != nil || time.Now().After(deadline) {
				return err
			}
			if !paused {
				if err := sleep(ctx, commitBackoff(attempt)); err != nil {
					return err
				}
			}
			continue
		}
		if !conflict && landedAnyway {
			return nil
		}
	}
}
