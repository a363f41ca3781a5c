package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/object"
)

// foldLogRetention is the object tier's fold-log retention for a name
// retention: the same window, and "keep every name" (negative) as a
// century, which the object tier takes.
func foldLogRetention(d time.Duration) time.Duration {
	if d < 0 {
		return 100 * 365 * 24 * time.Hour
	}
	return d
}

// Layout is how this Tier writes checkpoints (Options.Layout).
func (t *Tier) Layout() Layout { return t.opts.Layout }

// appendDelta is Append in the deltas layout: the checkpoint is one row
// of the blobs table, created once (object.Tier in its deltas layout),
// which no other writer touches. With MayHaveLanded an attempt made in
// the rows layout (before this process's layout changed) is looked for in
// the checkpoints table first, so that it is not written twice.
func (t *Tier) appendDelta(ctx context.Context, c durable.Checkpoint) error {
	if c.MayHaveLanded {
		landed, err := t.landedAsRows(ctx, c)
		if err != nil || landed {
			return err
		}
	}
	if err := t.deltas.Append(ctx, c); err != nil {
		return fmt.Errorf("postgres: append %q of %q to %s (deltas layout): %w", c.Name, c.Writer, t.name, err)
	}
	return nil
}

// landedAsRows reports whether c's name is in the checkpoints table, bound
// to c's payload; bound to another, it is durable.ErrNameReused.
func (t *Tier) landedAsRows(ctx context.Context, c durable.Checkpoint) (bool, error) {
	digest := durable.Digest("append", c.Writer, durable.MergeRanges(c.Ranges), c.Rows())
	var had string
	err := t.read(ctx, func(tx pgx.Tx) error {
		return tx.QueryRow(ctx, "SELECT digest FROM "+t.ckpts+" WHERE writer = $1 AND name = $2", c.Writer, c.Name).Scan(&had)
	})
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("postgres: append %q of %q to %s: look for it in the rows layout: %w", c.Name, c.Writer, t.name, err)
	case had != digest:
		return false, fmt.Errorf("postgres: append %q of %q to %s: %w: committed with payload %s, now %s: give every distinct checkpoint its own name",
			c.Name, c.Writer, t.name, durable.ErrNameReused, had, digest)
	}
	return true, nil
}

// FoldDeltas merges the deltas layout's checkpoints into its bases (see
// object.Tier.Fold): the fleet role's fold job, once per checkpoint
// interval. It reads and writes only the blobs table; the coverage rows
// stay as they are. Two at once only waste work.
func (t *Tier) FoldDeltas(ctx context.Context) (object.FoldResult, error) {
	res, err := t.deltas.Fold(ctx)
	if err != nil {
		return res, fmt.Errorf("postgres: fold the deltas of %s: %w", t.name, err)
	}
	return res, nil
}

// DeltaStats are the deltas layout's counters since Open (object.Stats):
// appends, writes, refused creations, unreadable deltas left out.
func (t *Tier) DeltaStats() object.Stats { return t.deltas.Stats() }

// deltaCoverage adds the deltas layout's coverage of f to out.
func (t *Tier) deltaCoverage(ctx context.Context, f durable.Filter, out map[coverage.Destination]*coverage.RangeSet) error {
	got, err := t.deltas.Coverage(ctx, f)
	if err != nil {
		return fmt.Errorf("postgres: coverage %+v of %s (deltas layout): %w", f, t.name, err)
	}
	for d, set := range got {
		if have := out[d]; have != nil {
			have.Union(set)
		} else {
			out[d] = set
		}
	}
	return nil
}

// deltaLastWrites adds the deltas layout's last writes of f to out, the
// later of the two where both have one.
func (t *Tier) deltaLastWrites(ctx context.Context, f durable.Filter, out map[coverage.Destination]durable.LastWrite) error {
	got, err := t.deltas.LastWrites(ctx, f)
	if err != nil {
		return fmt.Errorf("postgres: last writes %+v of %s (deltas layout): %w", f, t.name, err)
	}
	for d, lw := range got {
		if have, ok := out[d]; !ok || lw.At.After(have.At) {
			out[d] = lw
		}
	}
	return nil
}

// deltaTopicSinks adds to out the sinks the deltas layout holds of each of
// topics (of every topic, for none given).
func (t *Tier) deltaTopicSinks(ctx context.Context, topics []string, out map[string][]string) error {
	filters := []durable.Filter{{}}
	if len(topics) > 0 {
		filters = filters[:0]
		for _, topic := range topics {
			filters = append(filters, durable.Filter{Topic: topic})
		}
	}
	for _, f := range filters {
		got, err := t.deltas.LastWrites(ctx, f)
		if err != nil {
			return fmt.Errorf("postgres: the sinks of topic %q of %s (deltas layout): %w", f.Topic, t.name, err)
		}
		for d := range got {
			if !slices.Contains(out[d.Topic], d.Sink) {
				out[d.Topic] = append(out[d.Topic], d.Sink)
			}
		}
	}
	for topic := range out {
		slices.SortFunc(out[topic], strings.Compare)
	}
	return nil
}
