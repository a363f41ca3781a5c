package iceberg

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// RecordedAt gives the rows of a rewrite the recorded_at they keep:
// RecordedAt[d][i] is that of the i-th range of destination d in the
// commit. A destination missing, or a zero time, is recorded at the
// rewrite's own time.
type RecordedAt map[coverage.Destination][]time.Time

// validate reports times that do not fit c's ranges one for one: a
// destination of the commit named twice (both would take the same times),
// a count that differs, or times for a destination the commit lacks.
func (times RecordedAt) validate(c durable.Checkpoint) error {
	if times == nil {
		return nil
	}
	seen := make(map[coverage.Destination]bool, len(c.Ranges))
	for _, dr := range c.Ranges {
		if seen[dr.Destination] {
			return fmt.Errorf("iceberg: rewrite %s names %s twice; with recorded times each destination is one entry", c.Name, dr.Destination)
		}
		seen[dr.Destination] = true
		if own, ok := times[dr.Destination]; ok && len(own) != len(dr.Ranges) {
			return fmt.Errorf("iceberg: rewrite %s: %d recorded times for the %d ranges of %s", c.Name, len(own), len(dr.Ranges), dr.Destination)
		}
	}
	for d := range times {
		if !seen[d] {
			return fmt.Errorf("iceberg: rewrite %s has recorded times for %s, which it does not write", c.Name, d)
		}
	}
	return nil
}

// ReadFilesCoverage reads every row of the data files of tasks, all filed
// under sink: each destination's coverage, and for each of its merged
// ranges (in the order the set yields them) the latest recorded_at of the
// rows merged into it. A rewrite of those files gives each merged row that
// time, so that lag measured from recorded_at says when a destination last
// grew, not when its rows were rewritten; a gap's age, measured from the
// rows over it, may then read younger than it is, never older. A row of
// another sink is ErrCorrupt: a rewrite must carry every row of the files
// it replaces, and could not file that one under sink.
func ReadFilesCoverage(ctx context.Context, tbl *table.Table, sink string, tasks []table.FileScanTask) (map[coverage.Destination]*coverage.RangeSet, RecordedAt, error) {
	sets := map[coverage.Destination]*coverage.RangeSet{}
	// The latest time of each merged range, by its start: one entry per
	// range, folded in as rows are added, not one per row.
	latest := map[coverage.Destination]map[uint64]time.Time{}
	var replaced []coverage.Range
	err := ReadFileRows(ctx, tbl, tasks, true, func(r Row) error {
		if r.Destination.Sink != sink {
			return fmt.Errorf("%w: a data file filed under sink %q holds a row of %s %s; %s", coverage.ErrCorrupt, sink, r.Destination, r.Range, corruptRowAdvice)
		}
		set, at := sets[r.Destination], latest[r.Destination]
		if set == nil {
			set, at = new(coverage.RangeSet), map[uint64]time.Time{}
			sets[r.Destination], latest[r.Destination] = set, at
		}
		m, err := set.MergeRange(r.Range, replaced[:0])
		if err != nil {
			return err
		}
		replaced = m.Replaced
		t := r.RecordedAt
		if m.Added == 0 {
			// Already covered: m.Merged is the stored range holding it.
			t = later(t, at[m.Merged.Start])
		}
		for _, old := range m.Replaced {
			t = later(t, at[old.Start])
			delete(at, old.Start)
		}
		at[m.Merged.Start] = t
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	times := make(RecordedAt, len(sets))
	for d, set := range sets {
		own := make([]time.Time, 0, set.Len())
		for r := range set.All() {
			own = append(own, latest[d][r.Start])
		}
		times[d] = own
	}
	return sets, times, nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
