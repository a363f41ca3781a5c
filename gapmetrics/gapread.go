package gapmetrics

// Reading the coverage table for the gap metrics: every row with its
// recorded_at, from which recovery.Dating dates the gaps.

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/recovery"
)

func (g *Metrics) read(ctx context.Context) (map[string]SinkGaps, error) {
	tbl, err := g.opts.Table.Load(ctx)
	if err != nil {
		return nil, err
	}
	all, dating, err := readRows(ctx, tbl, g.opts.Reference)
	if err != nil {
		return nil, err
	}
	var extents []coverage.Extent
	if g.opts.Extents != nil {
		extents = g.opts.Extents()
	}
	events, err := g.states(ctx)
	if err != nil {
		return nil, err
	}
	tasks, held, err := recovery.PlanCoverageHeld(all, recovery.PlanOptions{Reference: g.opts.Reference, Sinks: g.opts.Sinks, TopicSinks: g.opts.TopicSinks, Extents: extents, States: events})
	if err != nil {
		return nil, err
	}
	now := g.opts.Now()
	out := map[string]SinkGaps{g.opts.Reference: {}}
	for d := range all {
		out[d.Sink] = SinkGaps{}
	}
	for _, s := range g.opts.Sinks {
		out[s] = SinkGaps{}
	}
	for _, sinks := range g.opts.TopicSinks {
		for _, s := range sinks {
			out[s] = SinkGaps{}
		}
	}
	seen := make(map[gapKey]time.Time, len(tasks))
	for _, task := range tasks { // one task per maximal gap: MaxBatches is 0
		since, ok := dating.Since(task)
		if !ok || since.After(now) {
			// No row shows it yet, or only rows of a writer whose clock is
			// ahead: this process's memory alone dates it.
			since = now
		}
		key := gapKey{task.Destination, task.Range.Start}
		if first, ok := g.seen[key]; ok && first.Before(since) {
			since = first
		}
		seen[key] = since
		s := out[task.Destination.Sink]
		s.Gaps++
		s.MissingBatches = coverage.AddSaturating(s.MissingBatches, task.Range.Len())
		if s.OldestSince.IsZero() || since.Before(s.OldestSince) {
			s.OldestSince = since
		}
		out[task.Destination.Sink] = s
	}
	g.seen = seen // closed gaps are forgotten: memory stays one entry per gap
	for _, h := range held {
		s := out[h.Sink]
		if c := s.held(h.Kind); c != nil {
			c.add(Held{Gaps: 1, MissingBatches: h.End - h.Start})
		}
		out[h.Sink] = s
	}
	return out, nil
}

// states reads every gap state from Options.States, or from the table when
// it keeps them; none from a table that does not.
func (g *Metrics) states(ctx context.Context) ([]gapstate.Event, error) {
	s := g.opts.States
	if s == nil {
		var ok bool
		if s, ok = any(g.opts.Table).(durable.StateStore); !ok {
			return nil, nil
		}
	}
	events, err := s.States(ctx, durable.Filter{})
	if err != nil {
		return nil, fmt.Errorf("reading the gap states: %w", err)
	}
	return events, nil
}

// readRows reads every row of the table: the merged coverage per
// destination, as iceberg.ReadCoverage does, and the rows with their
// recorded_at, to date the gaps by (recovery.Dating).
func readRows(ctx context.Context, tbl *table.Table, reference string) (map[coverage.Destination]*coverage.RangeSet, *recovery.Dating, error) {
	all, dating := map[coverage.Destination]*coverage.RangeSet{}, recovery.NewDating(reference)
	err := iceberg.ReadRows(ctx, tbl, durable.Filter{}, true, func(r iceberg.Row) error {
		d := r.Destination
		set := all[d]
		if set == nil {
			set = new(coverage.RangeSet)
			all[d] = set
		}
		if err := set.Add(r.Range); err != nil {
			return err
		}
		return dating.Add(d, r.Range, r.RecordedAt)
	})
	if err != nil {
		return nil, nil, err
	}
	return all, dating, nil
}
