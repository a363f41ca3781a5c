package gapspec

import (
	"cmp"
	"maps"
	"math/big"
	"slices"
	"strconv"

	"github.com/covmirror/covmirror/coverage"
)

// SummaryColumns are the summary query's columns, the cells of each row of
// Result.Summary in this order ("NULL" for a sink without gaps' oldest).
var SummaryColumns = []string{"sink", "ranges", "covered_batches", "gaps", "missing_batches",
	"oldest_gap_topic", "oldest_gap_partition", "oldest_gap_start", "oldest_gap_end",
	"refused_batches", "unrecoverable_batches", "waived_batches"}

// SummaryOf is the summary the gaps of c add up to, for an engine without a
// summary of its own: one row per sink listed (each sink with rows of the
// selected topic, the sinks named for each topic with rows, the reference
// where it has selected rows, every sink with a gap), with its merged
// covered ranges of the selected partitions, its gaps and its oldest gap
// (the lowest start; then topic, then partition), and the batches its
// refused, unrecoverable and waived gaps miss (all counted in missing too:
// a state never makes a gap smaller).
func SummaryOf(c Case, gaps []Gap) [][]string {
	f := c.Filter
	sinkOK := func(s string) bool { return f.Sink == "" || s == f.Sink }
	listed := map[string]bool{}
	covered := map[coverage.Destination]*coverage.RangeSet{}
	topicRows := map[string]bool{}
	for _, r := range c.Rows {
		d := r.Destination
		if f.Topic != "" && d.Topic != f.Topic {
			continue
		}
		topicRows[d.Topic] = true
		if d.Sink != c.Reference && sinkOK(d.Sink) {
			listed[d.Sink] = true
		}
		if f.Partition != nil && d.Partition != *f.Partition {
			continue
		}
		if d.Sink == c.Reference && sinkOK(d.Sink) {
			listed[d.Sink] = true
		}
		if covered[d] == nil {
			covered[d] = new(coverage.RangeSet)
		}
		_ = covered[d].Add(r.Range)
	}
	for topic := range topicRows {
		for _, s := range coverage.SinksFor(topic, c.Sinks, c.TopicSinks) {
			if s != c.Reference && sinkOK(s) {
				listed[s] = true
			}
		}
	}
	for _, g := range gaps {
		listed[g.Destination.Sink] = true
	}
	var out [][]string
	for _, sink := range slices.Sorted(maps.Keys(listed)) {
		ranges, batches := 0, new(big.Int)
		for d, set := range covered {
			if d.Sink == sink {
				for r := range set.All() {
					ranges++
					batches.Add(batches, new(big.Int).SetUint64(r.Len()))
				}
			}
		}
		n, missing := 0, new(big.Int)
		held := map[string]*big.Int{"refused": new(big.Int), "unrecoverable": new(big.Int), "waived": new(big.Int)}
		var oldest *Gap
		for _, g := range gaps {
			if g.Destination.Sink != sink {
				continue
			}
			n++
			missing.Add(missing, new(big.Int).SetUint64(g.Range.Len()))
			if h := held[g.Kind]; h != nil {
				h.Add(h, new(big.Int).SetUint64(g.Range.Len()))
			}
			if oldest == nil || cmp.Or(cmp.Compare(g.Range.Start, oldest.Range.Start), cmp.Compare(g.Destination.Topic, oldest.Destination.Topic),
				cmp.Compare(g.Destination.Partition, oldest.Destination.Partition)) < 0 {
				oldest = &g
			}
		}
		row := []string{sink, strconv.Itoa(ranges), batches.String(), strconv.Itoa(n), missing.String(), "NULL", "NULL", "NULL", "NULL",
			held["refused"].String(), held["unrecoverable"].String(), held["waived"].String()}
		if oldest != nil {
			d, r := oldest.Destination, oldest.Range
			row[5], row[6], row[7], row[8] = d.Topic, strconv.Itoa(int(d.Partition)), strconv.FormatUint(r.Start, 10), strconv.FormatUint(r.End, 10)
		}
		out = append(out, row)
	}
	return out
}
