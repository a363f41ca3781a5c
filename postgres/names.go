package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// pruneWriterSQL deletes up to $4 of writer $1's names committed before $2,
// but never $3, the name being appended (it may be that old, and is
// looked for next). The ctids come from the (writer, committed_at) index;
// the conditions are checked again on the rows deleted.
const pruneWriterSQL = `
DELETE FROM %[1]s
WHERE ctid = ANY (ARRAY(SELECT ctid FROM %[1]s WHERE writer = $1 AND committed_at < $2 AND name <> $3 LIMIT $4))
  AND writer = $1 AND committed_at < $2 AND name <> $3`

// pruneAllSQL deletes up to $2 names of any writer committed before $1.
const pruneAllSQL = `
DELETE FROM %[1]s
WHERE ctid = ANY (ARRAY(SELECT ctid FROM %[1]s WHERE committed_at < $1 LIMIT $2))
  AND committed_at < $1`

// recordName inserts c's name row, and, in the same round trip, deletes up
// to PruneBatch of the writer's names past Options.NameRetention. It
// returns how many name rows it inserted: 1, or 0 where the name is there
// already.
func (t *Tier) recordName(ctx context.Context, tx pgx.Tx, c durable.Checkpoint, digest string, sinks []string, now time.Time) (int64, error) {
	b := &pgx.Batch{}
	b.Queue("INSERT INTO "+t.ckpts+" (writer, name, digest, sinks, ranges, committed_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (writer, name) DO NOTHING",
		c.Writer, c.Name, digest, sinks, c.Rows(), now)
	prune := t.opts.NameRetention > 0
	if prune {
		b.Queue(fmt.Sprintf(pruneWriterSQL, t.ckpts), c.Writer, now.Add(-t.opts.NameRetention), c.Name, PruneBatch)
	}
	br := tx.SendBatch(ctx, b)
	tag, err := br.Exec()
	if err != nil {
		_ = br.Close()
		return 0, fmt.Errorf("record the name: %w", err)
	}
	if prune {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return 0, fmt.Errorf("prune the writer's names older than %v: %w", t.opts.NameRetention, err)
		}
	}
	if err := br.Close(); err != nil {
		return 0, fmt.Errorf("record the name: %w", err)
	}
	return tag.RowsAffected(), nil
}

// PruneNames deletes every writer's checkpoint names committed more than
// Options.NameRetention ago (by this Tier's clock), in transactions of
// PruneBatch names, and returns how many it deleted. Appends prune their
// own writer's names; this prunes those of writers that no longer append
// (a pod scaled away). Fold of the whole table calls it. With a negative
// NameRetention it deletes nothing.
func (t *Tier) PruneNames(ctx context.Context) (int64, error) {
	if t.opts.NameRetention < 0 {
		return 0, nil
	}
	cutoff := t.opts.Now().Add(-t.opts.NameRetention)
	sql := fmt.Sprintf(pruneAllSQL, t.ckpts)
	var total int64
	for {
		var n int64
		err := t.inTx(ctx, func(tx pgx.Tx) (bool, error) {
			tag, err := tx.Exec(ctx, sql, cutoff, PruneBatch)
			n = tag.RowsAffected()
			return err == nil, err
		})
		if err != nil {
			return total, fmt.Errorf("postgres: prune names older than %v on %s (%d deleted before): %w", cutoff, t.name, total, err)
		}
		total += n
		if n < PruneBatch {
			return total, nil
		}
	}
}

// Landed reports whether writer's checkpoint of that name was committed,
// in either layout.
// A name commits in the same transaction as its ranges and is kept for
// Options.NameRetention, so for a checkpoint younger than that the answer
// is exact. An older one may have been pruned: false, and appending it
// again writes its ranges again, a union that changes no coverage.
func (t *Tier) Landed(ctx context.Context, writer, name string) (bool, error) {
	if strings.IndexByte(writer, 0) >= 0 || strings.IndexByte(name, 0) >= 0 {
		return false, nil // never stored: Append refuses a NUL
	}
	var ok bool
	err := t.read(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+t.ckpts+" WHERE writer = $1 AND name = $2)", writer, name).Scan(&ok)
	})
	if err != nil {
		return false, fmt.Errorf("postgres: landed %q of %q on %s: %w", name, writer, t.name, err)
	}
	if ok {
		return true, nil
	}
	// Or written in the deltas layout: a delta, or a fold log's name.
	ok, err = t.deltas.Landed(ctx, writer, name)
	if err != nil {
		return false, fmt.Errorf("postgres: landed %q of %q on %s (deltas layout): %w", name, writer, t.name, err)
	}
	return ok, nil
}

// noteWritten adds d to the destinations the next fold of Append looks at.
func (t *Tier) noteWritten(d dests) {
	if len(d.sinks) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.written == nil {
		t.written = map[coverage.Destination]struct{}{}
	}
	for i := range d.sinks {
		t.written[coverage.Destination{Sink: d.sinks[i], Topic: d.topics[i], Partition: d.parts[i]}] = struct{}{}
	}
}

// foldWrittenSince folds the destinations this Tier appended to since its
// last fold, those past Options.FoldRows rows. The checkpoint has landed
// already; a failed fold only leaves more rows for reads to merge, and
// its destinations are kept for the next one.
func (t *Tier) foldWrittenSince(ctx context.Context) {
	t.mu.Lock()
	taken := t.written
	t.written = nil
	t.mu.Unlock()
	if len(taken) == 0 {
		return
	}
	var d dests
	for dest := range taken {
		d.add(dest)
	}
	n, err := t.foldWritten(ctx, d)
	if err != nil {
		t.mu.Lock()
		if t.written == nil {
			t.written = taken
		} else {
			for dest := range taken {
				t.written[dest] = struct{}{}
			}
		}
		t.mu.Unlock()
		t.opts.Logger.Warn("postgres: folding the coverage rows appended failed; the next fold retries", "tier", t.name, "destinations", len(d.sinks), "err", err)
		return
	}
	t.opts.Logger.Debug("postgres: coverage rows folded", "tier", t.name, "looked_at", len(d.sinks), "folded", n)
}
