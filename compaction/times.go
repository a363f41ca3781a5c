package compaction

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
)

// readSink reads one sink's rows at tbl's snapshot: each destination's
// coverage and, for each of its merged ranges (in the order Ranges gives
// them), the latest recorded_at of the rows merged into it. A compacted
// row keeps that time, so that lag measured from recorded_at says when a
// destination last grew, not when it was compacted; and a gap's age,
// measured from the rows over it, may still read younger than it is,
// never older.
func readSink(ctx context.Context, tbl *table.Table, sink string) (map[coverage.Destination]*coverage.RangeSet, iceberg.RecordedAt, error) {
	type stamped struct {
		start uint64
		at    time.Time
	}
	sets := map[coverage.Destination]*coverage.RangeSet{}
	rows := map[coverage.Destination][]stamped{}
	err := iceberg.ReadRows(ctx, tbl, iceberg.Filter{Sink: sink}, true, func(r iceberg.Row) error {
		set := sets[r.Destination]
		if set == nil {
			set = new(coverage.RangeSet)
			sets[r.Destination] = set
		}
		rows[r.Destination] = append(rows[r.Destination], stamped{start: r.Range.Start, at: r.RecordedAt})
		return set.Add(r.Range)
	})
	if err != nil {
		return nil, nil, err
	}
	times := make(iceberg.RecordedAt, len(sets))
	for d, set := range sets {
		merged := set.Ranges()
		at := make([]time.Time, len(merged))
		for _, row := range rows[d] {
			// The merged range holding the row: the last starting at or
			// before it (there is one: the row was added to the set).
			i, found := slices.BinarySearchFunc(merged, row.start, func(r coverage.Range, start uint64) int {
				return cmp.Compare(r.Start, start)
			})
			if !found {
				i--
			}
			if row.at.After(at[i]) {
				at[i] = row.at
			}
		}
		times[d] = at
	}
	return sets, times, nil
}
