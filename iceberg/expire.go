package iceberg

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/durable"
)

var _ durable.Expirer = (*Table)(nil)

// ExpireSnapshots expires old snapshots in one commit, retried on conflict
// with concurrent checkpoints until Options.CommitTimeout. Files no longer
// referenced are deleted after the commit. Expiry never changes what is
// covered: the table only ever appends, so the current snapshot references
// every data file.
func (t *Table) ExpireSnapshots(ctx context.Context, o durable.ExpireOptions) (expired int, err error) {
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(t.opts.CommitTimeout)
	for attempt := 1; ; attempt++ {
		tbl, err := t.Load(ctx)
		if err != nil {
			return 0, err
		}
		if !expirable(tbl, o, time.Now()) {
			return 0, nil // no commit for nothing: a checkpoint's worth of latency saved
		}
		before := len(tbl.Metadata().Snapshots())
		txn := tbl.NewTransaction()
		err = txn.ExpireSnapshots(table.WithOlderThan(o.OlderThan), table.WithRetainLast(o.RetainLast))
		var next *table.Table
		if err == nil {
			next, err = txn.Commit(ctx)
		}
		if err == nil {
			t.remember(next)
			return before - len(next.Metadata().Snapshots()), nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) || !isConflict(err) {
			return 0, fmt.Errorf("iceberg: expiring snapshots of %s (attempt %d): %w", t.Name(), attempt, err)
		}
	}
}

// expirable reports whether any snapshot of tbl is older than o.OlderThan
// and not among the newest o.RetainLast: with more than RetainLast
// snapshots, the oldest is never among the newest, so it decides.
func expirable(tbl *table.Table, o durable.ExpireOptions, now time.Time) bool {
	snaps := tbl.Metadata().Snapshots()
	if len(snaps) <= o.RetainLast {
		return false
	}
	oldest := snaps[0].TimestampMs
	for _, s := range snaps[1:] {
		oldest = min(oldest, s.TimestampMs)
	}
	return oldest < now.Add(-o.OlderThan).UnixMilli()
}
