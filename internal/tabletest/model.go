package tabletest

import (
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
)

// LatestByBruteForce is the naive model of what a rewrite keeps of rows:
// each destination's union, and for each merged range the latest
// recorded_at of the rows inside it, found by scanning every row.
func LatestByBruteForce(rows []iceberg.Row) (map[coverage.Destination]*coverage.RangeSet, map[coverage.Destination]map[coverage.Range]time.Time) {
	sets := map[coverage.Destination]*coverage.RangeSet{}
	for _, r := range rows {
		if sets[r.Destination] == nil {
			sets[r.Destination] = new(coverage.RangeSet)
		}
		_ = sets[r.Destination].Add(r.Range)
	}
	times := map[coverage.Destination]map[coverage.Range]time.Time{}
	for d, set := range sets {
		times[d] = map[coverage.Range]time.Time{}
		for m := range set.All() {
			var latest time.Time
			for _, r := range rows {
				if r.Destination == d && r.Range.Start >= m.Start && r.Range.End <= m.End && r.RecordedAt.After(latest) {
					latest = r.RecordedAt
				}
			}
			times[d][m] = latest
		}
	}
	return sets, times
}
