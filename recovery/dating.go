package recovery

// Dating gaps by the rows that show them: the one definition of a gap's
// age that the gap metrics and the coverage map share.

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// Dating dates a plan's gaps by the durable rows that show them, from each
// row's destination, range and recorded time (the coverage table's
// recorded_at). Add every row first, then ask Since for each task; a
// partition's index is built on its first Since, in O(n log n) for its n
// rows, after which a reference hole is dated in O(log n) and a sink's gap
// in O(log n) plus the reference rows inside it (a sink's gaps are disjoint,
// so all of one sink's gaps cost at most the reference's rows once more).
// A Dating is not safe for concurrent use.
//
// What dates a gap:
//   - a sink's gap (KindReplay): the earliest reference row over it, since
//     the gap is a gap from the moment the reference holds a batch of it;
//   - a hole of the reference (KindVerifyReference): the first moment rows
//     of the partition, of any destination, lay on both sides of it or over
//     it (the later of the earliest row starting below its end and the
//     earliest row ending above its start), since from then on the plan
//     looks for holes there.
//
// A merged row (compaction) keeps the latest recorded time of the rows it
// merged, so a date may be later than the gap's first evidence, never
// earlier: an age from it is a lower bound.
type Dating struct {
	reference string
	parts     map[TopicPartition]*partitionDating
}

// NewDating returns an empty Dating for the reference's (raw's) sink name.
func NewDating(reference string) *Dating {
	return &Dating{reference: reference, parts: map[TopicPartition]*partitionDating{}}
}

// datedRange is a range and the time it was recorded.
type datedRange struct {
	r  coverage.Range
	at time.Time
}

type partitionDating struct {
	ref, all []datedRange // as added, kept for a rebuild after a later Add
	built    bool
	// timeline is the reference's batches by when each was first covered:
	// disjoint segments ordered by start.
	timeline []datedRange
	// starts are all rows' starts ascending, startMin[i] the earliest time
	// of the rows starts[:i+1] belong to; ends and endMin the same for the
	// rows' ends, endMin[i] over ends[i:].
	starts, ends     []uint64
	startMin, endMin []time.Time
}

// Add records one durable row: a range of d recorded at at. An invalid range
// is refused, with the error of coverage.Range.Validate.
func (g *Dating) Add(d coverage.Destination, r coverage.Range, at time.Time) error {
	if err := r.Validate(); err != nil {
		return err
	}
	tp := TopicPartition{Topic: d.Topic, Partition: d.Partition}
	p := g.parts[tp]
	if p == nil {
		p = new(partitionDating)
		g.parts[tp] = p
	}
	if p.built {
		// A row after a Since: rebuild from what the index kept.
		p.unbuild()
	}
	row := datedRange{r: r, at: at}
	p.all = append(p.all, row)
	if d.Sink == g.reference {
		p.ref = append(p.ref, row)
	}
	return nil
}

// Since is when the rows first showed task's gap (see Dating), and false if
// no row shows it yet (a hole the acked extent alone reveals, or a gap of a
// partition without rows).
func (g *Dating) Since(task Task) (time.Time, bool) {
	p := g.parts[TopicPartition{Topic: task.Destination.Topic, Partition: task.Destination.Partition}]
	if p == nil {
		return time.Time{}, false
	}
	p.build()
	s, e := task.Range.Start, task.Range.End
	if task.Kind == KindVerifyReference {
		// Rows starting below e are a prefix of starts; rows ending above s
		// a suffix of ends.
		i := sort.Search(len(p.starts), func(i int) bool { return p.starts[i] >= e })
		j := sort.Search(len(p.ends), func(j int) bool { return p.ends[j] > s })
		if i == 0 || j == len(p.ends) {
			return time.Time{}, false
		}
		below, above := p.startMin[i-1], p.endMin[j]
		if below.After(above) {
			return below, true
		}
		return above, true
	}
	tl := p.timeline
	var best time.Time
	found := false
	for i := sort.Search(len(tl), func(i int) bool { return tl[i].r.End > s }); i < len(tl) && tl[i].r.Start < e; i++ {
		if !found || tl[i].at.Before(best) {
			best, found = tl[i].at, true
		}
	}
	return best, found
}

func (p *partitionDating) build() {
	if p.built {
		return
	}
	p.built = true
	// The reference's timeline: its rows in the order they were recorded,
	// each contributing the batches it covered first.
	slices.SortStableFunc(p.ref, func(a, b datedRange) int { return a.at.Compare(b.at) })
	var set coverage.RangeSet
	var replaced, fresh []coverage.Range
	for _, row := range p.ref {
		m, err := set.MergeRange(row.r, replaced)
		if err != nil {
			continue // unreachable: Add refused invalid ranges
		}
		replaced = m.Replaced
		fresh = m.Fresh(row.r, fresh[:0])
		for _, f := range fresh {
			p.timeline = append(p.timeline, datedRange{r: f, at: row.at})
		}
	}
	slices.SortFunc(p.timeline, func(a, b datedRange) int { return cmp.Compare(a.r.Start, b.r.Start) })

	n := len(p.all)
	p.starts, p.ends = make([]uint64, n), make([]uint64, n)
	p.startMin, p.endMin = make([]time.Time, n), make([]time.Time, n)
	slices.SortFunc(p.all, func(a, b datedRange) int { return cmp.Compare(a.r.Start, b.r.Start) })
	for i, row := range p.all {
		p.starts[i], p.startMin[i] = row.r.Start, row.at
		if i > 0 && p.startMin[i-1].Before(row.at) {
			p.startMin[i] = p.startMin[i-1]
		}
	}
	slices.SortFunc(p.all, func(a, b datedRange) int { return cmp.Compare(a.r.End, b.r.End) })
	for i := n - 1; i >= 0; i-- {
		row := p.all[i]
		p.ends[i], p.endMin[i] = row.r.End, row.at
		if i < n-1 && p.endMin[i+1].Before(row.at) {
			p.endMin[i] = p.endMin[i+1]
		}
	}
}

// unbuild drops the index so that the next Since rebuilds it with the rows
// added since.
func (p *partitionDating) unbuild() {
	p.built = false
	p.timeline, p.starts, p.ends, p.startMin, p.endMin = nil, nil, nil, nil, nil
}
