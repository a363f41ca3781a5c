package postgres

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/gapspec"
)

// TestGapSpec runs the gap rule's spec (internal/gapspec/testdata/gaps)
// through PostgreSQL's gaps query, in a fresh schema per case holding the
// case's rows as one checkpoint and its gap states as rows of gap_states:
// the gaps, each with the kind and event the query gives it, with the case's filters, the
// reference's holes with the reference as the only filter, and the
// summary query's rows with the case's filters.
func TestGapSpec(t *testing.T) {
	gapspec.Run(t, func(t *testing.T, c gapspec.Case) gapspec.Result {
		schema := freshSchema(t)
		tier := openTier(t, schema)
		if len(c.Rows) > 0 {
			if err := tier.Append(ctx, durable.Checkpoint{Name: "pod/1", Writer: "pod", Ranges: c.Checkpoint()}); err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range c.States {
			exec(t, `INSERT INTO `+pgx.Identifier{schema, "gap_states"}.Sanitize()+` (id, sink, topic, "partition", range_start, range_end, state, reason, decided_by, decided_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
				e.ID, e.Sink, e.Topic, e.Partition, int64(e.Range.Start), int64(e.Range.End), string(e.State), e.Reason, e.By, e.At)
		}
		run := func(p QueryParams) []gapspec.Gap {
			res, err := tier.Query(ctx, "gaps", p)
			if err != nil {
				t.Fatalf("gaps %+v: %v", p, err)
			}
			var out []gapspec.Gap
			for _, v := range res.Rows {
				sink, _ := v[0].(string)
				topic, _ := v[1].(string)
				part, _ := v[2].(int32)
				start, _ := v[3].(int64)
				end, _ := v[4].(int64)
				kind, _ := v[5].(string)
				event, _ := v[6].(string)
				d := coverage.Destination{Sink: sink, Topic: topic, Partition: part}
				out = append(out, gapspec.Gap{Destination: d, Range: coverage.Range{Start: uint64(start), End: uint64(end)}, Kind: kind, Event: event})
			}
			return out
		}
		p := QueryParams{Reference: c.Reference, Sink: c.Filter.Sink, Topic: c.Filter.Topic, Partition: c.Filter.Partition, Extents: c.Extents, Sinks: c.Sinks, TopicSinks: c.TopicSinks}
		summary, err := tier.Query(ctx, "summary", p)
		if err != nil {
			t.Fatalf("summary %+v: %v", p, err)
		}
		if !slices.Equal(summary.Columns, gapspec.SummaryColumns) {
			t.Fatalf("summary columns %v, want %v", summary.Columns, gapspec.SummaryColumns)
		}
		return gapspec.Result{
			Gaps:    run(p),
			Holes:   run(QueryParams{Reference: c.Reference, Sink: c.Reference, Extents: c.Extents}),
			Summary: catalogtest.CellText(summary.Rows),
		}
	})
}
