package covmap

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/recovery"
)

// ageNote says how exact the ages are; the page shows it.
const ageNote = "A gap's age runs from when the committed rows first showed it, by their recorded_at: the earliest of the reference's rows over it, for a sink; the first moment rows lay on both sides of it or over it, for a hole of the reference (as the gap metrics date it). Compaction gives a merged row the latest recorded_at of the rows it merged, so a gap may be older than shown, never younger. A hole only the acked extent reveals has no age."

// bar is one destination's row on a partition: ranges as "start-end" pairs
// separated by spaces (decimal strings: batch ids above 2^53 stay exact).
type bar struct {
	Sink           string     `json:"sink"`
	Covered        string     `json:"covered"`
	Gaps           string     `json:"gaps"`
	Pending        string     `json:"pending"`
	CoveredMore    int        `json:"covered_more,omitempty"`
	GapsMore       int        `json:"gaps_more,omitempty"`
	PendingMore    int        `json:"pending_more,omitempty"`
	GapBatches     uint64     `json:"gap_batches"`
	PendingBatches uint64     `json:"pending_batches"`
	OldestGapSince *time.Time `json:"oldest_gap_since,omitempty"`
	// Held are the gaps a replay cannot close (Gaps holds the others),
	// with their kind and decision; HeldMore says how many were cut.
	Held     []heldView `json:"held"`
	HeldMore int        `json:"held_more,omitempty"`
}

// heldView is one gap of a held kind on a bar, with the decision behind
// it. Reason is the decider's own text: the page must escape it.
type heldView struct {
	Start  string    `json:"start"`
	End    string    `json:"end"`
	Kind   string    `json:"kind"`
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Event  string    `json:"event"`
}

type partitionView struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Start and End are the drawn extent: the reference's committed extent
	// with its holes, widened by pending ranges.
	Start string `json:"start"`
	End   string `json:"end"`
	Bars  []bar  `json:"bars"`
}

// agg sums a group of destinations.
type agg struct {
	Destinations   int        `json:"destinations"`
	WithGaps       int        `json:"destinations_with_gaps"`
	Gaps           int        `json:"gaps"`
	MissingBatches uint64     `json:"missing_batches"`
	PendingBatches uint64     `json:"pending_batches"`
	OldestGapSince *time.Time `json:"oldest_gap_since,omitempty"`
	// MissingBatches counts every missing batch, held ones included: a
	// state never makes a gap smaller. These say how many are held.
	RefusedBatches       uint64 `json:"refused_batches"`
	UnrecoverableBatches uint64 `json:"unrecoverable_batches"`
	WaivedBatches        uint64 `json:"waived_batches"`
}

func (a *agg) add(d *destState) {
	a.Destinations++
	if len(d.gaps)+len(d.held) > 0 {
		a.WithGaps++
	}
	a.Gaps += len(d.gaps) + len(d.held)
	for _, g := range d.held {
		n := g.Range.Len()
		switch g.Kind {
		case recovery.KindRefused:
			a.RefusedBatches = coverage.AddSaturating(a.RefusedBatches, n)
		case recovery.KindUnrecoverable:
			a.UnrecoverableBatches = coverage.AddSaturating(a.UnrecoverableBatches, n)
		case recovery.KindWaived:
			a.WaivedBatches = coverage.AddSaturating(a.WaivedBatches, n)
		}
	}
	// Saturating, as the gap metrics' sums: a wrapped sum would hide a loss.
	a.MissingBatches = coverage.AddSaturating(a.MissingBatches, d.gapBatches)
	a.PendingBatches = coverage.AddSaturating(a.PendingBatches, d.pending.Batches())
	if d.oldest != nil && (a.OldestGapSince == nil || d.oldest.Before(*a.OldestGapSince)) {
		a.OldestGapSince = d.oldest
	}
}

type sinkAgg struct {
	Sink string `json:"sink"`
	agg
}

type topicAgg struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	agg
}

// mapView is /v1/map's body.
type mapView struct {
	Reference   string    `json:"reference"`
	GeneratedAt time.Time `json:"generated_at"`
	ReadAt      time.Time `json:"committed_read_at"`
	SnapshotID  string    `json:"snapshot_id"`
	// CommittedAt is the snapshot's commit time, nil where the source has
	// none (the page then shows ReadAt).
	CommittedAt  *time.Time `json:"committed_at,omitempty"`
	Note         string     `json:"note,omitempty"`
	AgeNote      string     `json:"age_note"`
	PendingKnown bool       `json:"pending_known"`
	PendingError string     `json:"pending_error,omitempty"`
	RefreshMs    int64      `json:"refresh_ms"`
	Sink         string     `json:"sink,omitempty"`
	Topic        string     `json:"topic,omitempty"`
	Totals       agg        `json:"totals"`
	Sinks        []sinkAgg  `json:"sinks"`
	SinksMore    int        `json:"sinks_more,omitempty"`
	Topics       []topicAgg `json:"topics"`
	TopicsMore   int        `json:"topics_more,omitempty"`
	// Partitions is filled only for a sink or topic filter.
	Partitions      []partitionView `json:"partitions,omitempty"`
	PartitionsTotal int             `json:"partitions_total"`
	Offset          int             `json:"offset"`
}

// destState is one destination on the map.
type destState struct {
	sink       string
	covered    *coverage.RangeSet
	gaps       []coverage.Range // a replay closes them
	held       []Gap            // held kinds, apart
	gapBatches uint64           // both
	oldest     *time.Time
	pending    coverage.RangeSet
}

type partState struct {
	tp     recovery.TopicPartition
	extent coverage.Range // zero when empty
	dests  map[string]*destState
}

func (p *partState) dest(sink string) *destState {
	d := p.dests[sink]
	if d == nil {
		d = &destState{sink: sink, covered: new(coverage.RangeSet)}
		p.dests[sink] = d
	}
	return d
}

func widen(r, by coverage.Range) coverage.Range {
	if r.End == 0 {
		return by
	}
	return coverage.Range{Start: min(r.Start, by.Start), End: max(r.End, by.End)}
}

// index arranges committed coverage and pending ranges by partition.
func index(c *Committed, pending []Pending) map[recovery.TopicPartition]*partState {
	parts := map[recovery.TopicPartition]*partState{}
	part := func(d coverage.Destination) *partState {
		tp := recovery.TopicPartition{Topic: d.Topic, Partition: d.Partition}
		p := parts[tp]
		if p == nil {
			p = &partState{tp: tp, dests: map[string]*destState{}}
			parts[tp] = p
		}
		return p
	}
	for d, set := range c.Covered {
		p := part(d)
		p.dest(d.Sink).covered = set
		if d.Sink == c.Reference {
			if first, ok := set.First(); ok {
				last, _ := set.Last()
				p.extent = widen(p.extent, coverage.Range{Start: first.Start, End: last.End})
			}
		}
	}
	for _, g := range c.Gaps {
		p := part(g.Destination)
		ds := p.dest(g.Destination.Sink)
		if g.Kind.Held() {
			ds.held = append(ds.held, g)
		} else {
			ds.gaps = append(ds.gaps, g.Range)
		}
		ds.gapBatches = coverage.AddSaturating(ds.gapBatches, g.Range.Len())
		if g.Since != nil && (ds.oldest == nil || g.Since.Before(*ds.oldest)) {
			ds.oldest = g.Since
		}
		if g.Destination.Sink == c.Reference {
			p.extent = widen(p.extent, g.Range)
		}
	}
	for _, pd := range pending {
		p := part(pd.Destination)
		ds := p.dest(pd.Destination.Sink)
		for _, r := range pd.Ranges {
			if r.Validate() == nil {
				_ = ds.pending.Add(r)
				p.extent = widen(p.extent, r)
			}
		}
	}
	return parts
}

func formatRanges(rs []coverage.Range, limit int) (string, int) {
	var b strings.Builder
	for i, r := range rs {
		if i == limit {
			return b.String(), len(rs) - limit
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.FormatUint(r.Start, 10))
		b.WriteByte('-')
		b.WriteString(strconv.FormatUint(r.End, 10))
	}
	return b.String(), 0
}

// query is what a /v1/map request selects.
type query struct {
	sink, topic string
	onlyGaps    bool
	offset      int
}

// build is the view of parts that q selects.
func build(parts map[recovery.TopicPartition]*partState, ref string, q query, o *Options) mapView {
	v := mapView{Reference: ref, Sink: q.sink, Topic: q.topic, Offset: q.offset, Sinks: []sinkAgg{}, Topics: []topicAgg{}}
	sinks := map[string]*sinkAgg{}
	topics := map[string]*topicAgg{}
	var selected []*partState
	for _, p := range parts {
		if q.topic != "" && p.tp.Topic != q.topic {
			continue
		}
		shown := false
		for sink, d := range p.dests {
			if q.sink != "" && sink != q.sink {
				continue
			}
			shown = true
			v.Totals.add(d)
			s := sinks[sink]
			if s == nil {
				s = &sinkAgg{Sink: sink}
				sinks[sink] = s
			}
			s.add(d)
			t := topics[p.tp.Topic]
			if t == nil {
				t = &topicAgg{Topic: p.tp.Topic}
				topics[p.tp.Topic] = t
			}
			t.add(d)
		}
		if shown {
			topics[p.tp.Topic].Partitions++
			if q.sink != "" || q.topic != "" {
				selected = append(selected, p)
			}
		}
	}
	// Worst first, so that a cut keeps what needs attention.
	for _, s := range slices.SortedFunc(maps.Values(sinks), func(a, b *sinkAgg) int {
		return cmp.Or(cmp.Compare(b.MissingBatches, a.MissingBatches), cmp.Compare(a.Sink, b.Sink))
	}) {
		if len(v.Sinks) == o.MaxRows {
			v.SinksMore++
			continue
		}
		v.Sinks = append(v.Sinks, *s)
	}
	for _, t := range slices.SortedFunc(maps.Values(topics), func(a, b *topicAgg) int {
		return cmp.Or(cmp.Compare(b.MissingBatches, a.MissingBatches), cmp.Compare(a.Topic, b.Topic))
	}) {
		if len(v.Topics) == o.MaxRows {
			v.TopicsMore++
			continue
		}
		v.Topics = append(v.Topics, *t)
	}
	slices.SortFunc(selected, func(a, b *partState) int {
		return cmp.Or(cmp.Compare(a.tp.Topic, b.tp.Topic), cmp.Compare(a.tp.Partition, b.tp.Partition))
	})
	for _, p := range selected {
		bars := partitionBars(p, ref, q.sink, o.MaxRanges)
		if q.onlyGaps && !hasWork(bars) {
			continue
		}
		v.PartitionsTotal++
		if v.PartitionsTotal <= q.offset || len(v.Partitions) == o.MaxRows {
			continue
		}
		v.Partitions = append(v.Partitions, partitionView{Topic: p.tp.Topic, Partition: p.tp.Partition,
			Start: strconv.FormatUint(p.extent.Start, 10), End: strconv.FormatUint(p.extent.End, 10), Bars: bars})
	}
	return v
}

func hasWork(bars []bar) bool {
	for _, b := range bars {
		if b.Gaps != "" || b.Pending != "" || len(b.Held) > 0 {
			return true
		}
	}
	return false
}

// partitionBars is the reference's bar first, then the selected sinks'.
func partitionBars(p *partState, ref, sink string, maxRanges int) []bar {
	names := slices.Sorted(maps.Keys(p.dests))
	slices.SortStableFunc(names, func(a, b string) int {
		return cmp.Compare(boolInt(a != ref), boolInt(b != ref))
	})
	var out []bar
	for _, name := range names {
		if sink != "" && name != sink && name != ref {
			continue
		}
		d := p.dests[name]
		b := bar{Sink: name, GapBatches: d.gapBatches, PendingBatches: d.pending.Batches(), OldestGapSince: d.oldest}
		b.Covered, b.CoveredMore = formatRanges(d.covered.Ranges(), maxRanges)
		b.Gaps, b.GapsMore = formatRanges(d.gaps, maxRanges)
		b.Pending, b.PendingMore = formatRanges(d.pending.Ranges(), maxRanges)
		b.Held = []heldView{}
		for i, g := range d.held {
			if i == maxRanges {
				b.HeldMore = len(d.held) - maxRanges
				break
			}
			h := heldView{Start: strconv.FormatUint(g.Range.Start, 10), End: strconv.FormatUint(g.Range.End, 10), Kind: string(g.Kind)}
			if g.Decision != nil {
				h.Reason, h.By, h.At, h.Event = g.Decision.Reason, g.Decision.By, g.Decision.At, g.Decision.Event
			}
			b.Held = append(b.Held, h)
		}
		out = append(out, b)
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
