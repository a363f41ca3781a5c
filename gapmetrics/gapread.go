package gapmetrics

// Reading the coverage table for the gap metrics: every row with its
// recorded_at, from which a gap's age is measured.

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/recovery"
)

// row is one row of the coverage table, as far as ages need it.
type row struct {
	sink       string
	start, end uint64
	at         time.Time
}

func (g *Metrics) read(ctx context.Context) (map[string]SinkGaps, error) {
	tbl, err := g.opts.Table.Load(ctx)
	if err != nil {
		return nil, err
	}
	all, rows, err := readRows(ctx, tbl)
	if err != nil {
		return nil, err
	}
	var extents []coverage.Extent
	if g.opts.Extents != nil {
		extents = g.opts.Extents()
	}
	tasks, err := recovery.PlanCoverage(all, recovery.PlanOptions{Reference: g.opts.Reference, Sinks: g.opts.Sinks, Extents: extents})
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
	seen := make(map[gapKey]time.Time, len(tasks))
	for _, task := range tasks { // one task per maximal gap: MaxBatches is 0
		tp := recovery.TopicPartition{Topic: task.Destination.Topic, Partition: task.Destination.Partition}
		since := evidence(rows[tp], task, g.opts.Reference, now)
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
	return out, nil
}

// evidence is the earliest recorded_at at which the table showed task's gap
// (rows sorted by start), or now if no row does.
func evidence(rows []row, task recovery.Task, reference string, now time.Time) time.Time {
	s, e := task.Range.Start, task.Range.End
	if task.Kind == recovery.KindVerifyReference {
		// A hole shows once rows lie on both sides of (or over) it: some
		// row starting below its end and some row ending above its start.
		below, above := now, now
		for _, r := range rows {
			if r.start < e && r.at.Before(below) {
				below = r.at
			}
			if r.end > s && r.at.Before(above) {
				above = r.at
			}
		}
		if below.After(above) {
			return below
		}
		return above
	}
	// A sink's gap shows from the first reference row over it.
	since := now
	for _, r := range rows {
		if r.start >= e {
			break
		}
		if r.sink == reference && r.end > s && r.at.Before(since) {
			since = r.at
		}
	}
	return since
}

// readRows reads every row of the table: the merged coverage per
// destination, as iceberg.ReadCoverage does, and the rows with their
// recorded_at per partition, sorted by start.
func readRows(ctx context.Context, tbl *table.Table) (map[coverage.Destination]*coverage.RangeSet, map[recovery.TopicPartition][]row, error) {
	all, rows := map[coverage.Destination]*coverage.RangeSet{}, map[recovery.TopicPartition][]row{}
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
		tp := recovery.TopicPartition{Topic: d.Topic, Partition: d.Partition}
		rows[tp] = append(rows[tp], row{sink: d.Sink, start: r.Range.Start, end: r.Range.End, at: r.RecordedAt})
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for _, rs := range rows {
		slices.SortFunc(rs, func(a, b row) int { return cmp.Compare(a.start, b.start) })
	}
	return all, rows, nil
}
