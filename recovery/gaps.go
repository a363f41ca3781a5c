package recovery

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// Gap is one committed gap in the JSON shape `covmirror gaps --json` and the
// sidecar's GET /v1/gaps share (and, cut to task size, `covmirror plan
// --json` and GET /v1/plan). Kind says what closing it means: a gap of a
// sink is KindReplay; a gap whose sink is the reference is a hole in the
// reference's own coverage, KindVerifyReference.
type Gap struct {
	Sink      string   `json:"sink"`
	Topic     string   `json:"topic"`
	Partition int32    `json:"partition"`
	Start     uint64   `json:"start"`
	End       uint64   `json:"end"`
	Kind      TaskKind `json:"kind"`
	// Decision is, for a gap of a held kind (refused, unrecoverable,
	// waived), the recorded decision behind it; nil otherwise.
	Decision *Decision `json:"decision,omitempty"`
}

// GapsFilter selects gaps; empty fields match everything.
type GapsFilter struct {
	// Reference is raw's sink name. Zero value: coverage.RawSink.
	Reference string
	Sink      string
	Topic     string
	Partition *int32
	// Extents are the source's acked extents, as PlanOptions.Extents: they
	// select nothing, they widen where the reference's holes are looked
	// for. Zero value: none known.
	Extents []coverage.Extent
	// Sinks are sinks every topic is written to, as PlanOptions.Sinks:
	// they select nothing, they add the named sinks' gaps in topics they
	// have no rows of. Zero value: the sinks with rows of each topic.
	Sinks []string
	// TopicSinks are the named sinks per topic, in place of Sinks for its
	// keys, as PlanOptions.TopicSinks. Zero value: Sinks for every topic.
	TopicSinks map[string][]string
	// All lists waived gaps too. Zero value: waived gaps are left out (an
	// operator accepted them); refused and unrecoverable ones are listed.
	All bool
}

// CommittedGaps is the recovery plan with tasks as large as the gaps, from
// the durable tier only: the reference's holes (rows with sink =
// reference) and every other sink's gaps against the reference, ordered by
// sink, topic, partition and start, of the destinations f selects: it
// reads only the partitions f selects (PlanOptions.Select). A reference
// without rows in a table that has rows is a *NoReferenceError, as in Plan.
//
// Gaps the tier's gap states hold out of the plan are listed too, with
// their kind (refused, unrecoverable; waived with f.All) and decision, in
// the same order: every missing batch is in exactly one gap.
func CommittedGaps(ctx context.Context, t durable.Tier, f GapsFilter) ([]Gap, error) {
	tasks, held, err := planHeld(ctx, t, PlanOptions{Reference: f.Reference, Extents: f.Extents, Sinks: f.Sinks, TopicSinks: f.TopicSinks, MaxBatches: math.MaxUint64, MaxTasks: -1, Select: f.Filter()})
	if err != nil {
		return nil, err
	}
	return withHeld(GapsOf(tasks, f), held, f), nil
}

// withHeld merges the held gaps f selects into gaps, in sink, topic,
// partition and start order.
func withHeld(gaps, held []Gap, f GapsFilter) []Gap {
	n := len(gaps)
	for _, g := range held {
		if (g.Kind != KindWaived || f.All) && f.Selects(coverage.Destination{Sink: g.Sink, Topic: g.Topic, Partition: g.Partition}) {
			gaps = append(gaps, g)
		}
	}
	if len(gaps) > n {
		slices.SortStableFunc(gaps, compareGaps)
	}
	return gaps
}

func compareGaps(a, b Gap) int {
	return cmp.Or(cmp.Compare(a.Sink, b.Sink), cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Start, b.Start))
}

// GapsOf turns plan tasks into gaps, keeping those f selects (its Reference,
// Extents and Sinks are not used). It never returns nil.
func GapsOf(tasks []Task, f GapsFilter) []Gap {
	out := make([]Gap, 0, len(tasks))
	for _, t := range tasks {
		d := t.Destination
		if !f.Selects(d) {
			continue
		}
		out = append(out, Gap{Sink: d.Sink, Topic: d.Topic, Partition: d.Partition, Start: t.Range.Start, End: t.Range.End, Kind: kindOf(t)})
	}
	return out
}

// Filter is f's Sink, Topic and Partition as a durable.Filter: what
// CommittedGaps passes as PlanOptions.Select.
func (f GapsFilter) Filter() durable.Filter {
	return durable.Filter{Sink: f.Sink, Topic: f.Topic, Partition: f.Partition}
}

// Selects reports whether f's Sink, Topic and Partition select d.
func (f GapsFilter) Selects(d coverage.Destination) bool {
	return (f.Sink == "" || d.Sink == f.Sink) && (f.Topic == "" || d.Topic == f.Topic) && (f.Partition == nil || d.Partition == *f.Partition)
}

// kindOf is t's kind, the zero one spelled out (KindReplay).
func kindOf(t Task) TaskKind {
	if t.Kind == "" {
		return KindReplay
	}
	return t.Kind
}
