package recovery

import (
	"context"
	"errors"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/gapspec"
)

// TestGapSpec runs the gap rule's spec (internal/gapspec/testdata/gaps)
// through the planner: the gaps are CommittedGaps', the reference's holes
// the first assignment of Resume of each partition, both over a tier
// holding the case's rows, and the summary the one the gaps add up to. Regenerate the expected text with
// go test ./recovery -run GapSpec -rewrite.
func TestGapSpec(t *testing.T) {
	gapspec.Run(t, func(t *testing.T, c gapspec.Case) gapspec.Result {
		tier := specTier(c.Coverage())
		gaps, err := CommittedGaps(ctx, tier, GapsFilter{Reference: c.Reference, Sink: c.Filter.Sink, Topic: c.Filter.Topic,
			Partition: c.Filter.Partition, Extents: c.Extents, Sinks: c.Sinks})
		if err != nil {
			t.Fatalf("gaps: %v", err)
		}
		var res gapspec.Result
		for _, g := range gaps {
			d := coverage.Destination{Sink: g.Sink, Topic: g.Topic, Partition: g.Partition}
			res.Gaps = append(res.Gaps, gapspec.Gap{Destination: d, Range: coverage.Range{Start: g.Start, End: g.End}, Kind: string(g.Kind)})
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

// specTier is a durable tier holding fixed coverage, read only.
type specTier map[coverage.Destination]*coverage.RangeSet

func (specTier) Name() string { return "gapspec" }

func (specTier) Append(context.Context, durable.Checkpoint) error {
	return errors.New("gapspec: the spec's tier is read only")
}

func (s specTier) Coverage(_ context.Context, f durable.Filter) (map[coverage.Destination]*coverage.RangeSet, error) {
	out := map[coverage.Destination]*coverage.RangeSet{}
	for d, set := range s {
		if f.Match(d) {
			c := set.Clone()
			out[d] = &c
		}
	}
	return out, nil
}

func (specTier) Landed(context.Context, string, string) (bool, error) { return false, nil }
