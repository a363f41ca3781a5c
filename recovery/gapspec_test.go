package recovery

import (
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/gapspec"
)

// TestGapSpec runs the gap rule's spec (internal/gapspec/testdata/gaps)
// through the planner: the gaps are CommittedGaps' (waived ones too), the reference's holes
// the first assignment of Resume of each partition, both over a tier
// holding the case's rows, and the summary the one the gaps add up to. Regenerate the expected text with
// go test ./recovery -run GapSpec -rewrite.
func TestGapSpec(t *testing.T) {
	gapspec.Run(t, func(t *testing.T, c gapspec.Case) gapspec.Result {
		tier := &stateTier{mapTier: newMapTier(c.Coverage()), events: c.States}
		gaps, err := CommittedGaps(ctx, tier, GapsFilter{Reference: c.Reference, Sink: c.Filter.Sink, Topic: c.Filter.Topic,
			Partition: c.Filter.Partition, Extents: c.Extents, Sinks: c.Sinks, TopicSinks: c.TopicSinks, All: true})
		if err != nil {
			t.Fatalf("gaps: %v", err)
		}
		var res gapspec.Result
		for _, g := range gaps {
			d := coverage.Destination{Sink: g.Sink, Topic: g.Topic, Partition: g.Partition}
			gap := gapspec.Gap{Destination: d, Range: coverage.Range{Start: g.Start, End: g.End}, Kind: string(g.Kind)}
			if g.Decision != nil {
				gap.Event = g.Decision.Event
			}
			res.Gaps = append(res.Gaps, gap)
		}
		for _, d := range c.Partitions() {
			as, err := Resume(ctx, tier, d.Topic, d.Partition, ResumeOptions{Reference: c.Reference, Sinks: c.Sinks, Extents: c.Extents})
			if err != nil {
				t.Fatalf("resume %s/%d: %v", d.Topic, d.Partition, err)
			}
			for _, r := range as[0].Replay {
				res.Holes = append(res.Holes, gapspec.Gap{Destination: as[0].Destination, Range: r, Kind: string(as[0].Kind)})
			}
		}
		res.Summary = gapspec.SummaryOf(c, res.Gaps)
		return res
	})
}
