package mirror

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// conflictingTier is the real coverage table whose appends each count the
// conflicts the test queued for them, standing in for other pods' commits.
type conflictingTier struct {
	durable.Tier
	n, next atomic.Uint64
}

func (c *conflictingTier) Append(ctx context.Context, cp durable.Checkpoint) error {
	c.n.Add(c.next.Swap(0))
	return c.Tier.Append(ctx, cp)
}

func (c *conflictingTier) CommitConflicts() uint64 { return c.n.Load() }

// TestConflictWarning: checkpoints whose commits lose to other writers
// count into covmirror_checkpoint_commit_conflicts_total, and once a window
// passes with at least the threshold per checkpoint the Mirror warns once,
// naming the remedy; a window under the threshold stays quiet.
func TestConflictWarning(t *testing.T) {
	e := newEnv(t)
	tier := &conflictingTier{Tier: e.table}
	var logs bytes.Buffer
	m := e.owner(t, "", "pod")
	m.opts.Durable = tier
	m.opts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	m.conflicts.floor = 50 * time.Millisecond
	// A clock of the test's own: a window ends only where the test steps
	// past it, however slowly a loaded machine runs the rounds.
	clock := time.Unix(1_000_000, 0)
	m.conflicts.now = func() time.Time { return clock }
	c := m.Collector()
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	round := func(i int, conflicts uint64) {
		t.Helper()
		record(t, m, d, uint64(i)*2, uint64(i)*2+1)
		tier.next.Store(conflicts) // lost before this checkpoint's commit lands
		if err := m.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Quiet: half a conflict per checkpoint over a whole window.
	for i := range 4 {
		round(i, uint64(i%2))
	}
	clock = clock.Add(60 * time.Millisecond)
	round(4, 0)
	if strings.Contains(logs.String(), "conflicting") {
		t.Fatalf("warned under the threshold:\n%s", logs.String())
	}
	// Loud: two per checkpoint.
	for i := 5; i < 9; i++ {
		round(i, 2)
	}
	clock = clock.Add(60 * time.Millisecond)
	round(9, 2)
	if got := strings.Count(logs.String(), "keep conflicting"); got != 1 {
		t.Fatalf("%d warnings past the threshold, want 1:\n%s", got, logs.String())
	}
	if !strings.Contains(logs.String(), "--durable object|postgres") {
		t.Fatalf("the warning names no remedy:\n%s", logs.String())
	}
	if got := metricValues(t, c)["covmirror_checkpoint_commit_conflicts_total"]; got != 12 {
		t.Fatalf("covmirror_checkpoint_commit_conflicts_total = %v, want 12", got)
	}
}
