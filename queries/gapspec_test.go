package queries

import (
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/gapspec"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// TestGapSpec runs the gap rule's spec (internal/gapspec/testdata/gaps)
// through the DuckDB gaps query, over a table holding each case's rows as
// one checkpoint (overlapping and repeated rows as they are), its gap
// states bound as the gap_states relation, each event twice: the gaps,
// each with the kind and event the query gives it,
// with the case's filters, the reference's holes with the reference as
// the only filter, and the summary query's rows with the case's filters.
func TestGapSpec(t *testing.T) {
	gapspec.Run(t, func(t *testing.T, c gapspec.Case) gapspec.Result {
		tbl := tabletest.EmbeddedTable(t)
		if len(c.Rows) > 0 {
			if err := tbl.Append(ctx, durable.Checkpoint{Name: "pod/1", Writer: "pod", Ranges: c.Checkpoint()}); err != nil {
				t.Fatal(err)
			}
		}
		db, err := Open(ctx, tbl, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		// Each event twice, as a retried append may leave it: read once.
		if err := db.BindStates(ctx, append(slices.Clone(c.States), c.States...)); err != nil {
			t.Fatal(err)
		}
		run := func(p Params) []gapspec.Gap {
			res, err := db.Run(ctx, "gaps", p)
			if err != nil {
				t.Fatalf("gaps %+v: %v", p, err)
			}
			var out []gapspec.Gap
			for i, r := range destinationRows(t, res) {
				d := coverage.Destination{Sink: r.Sink, Topic: r.Topic, Partition: r.Partition}
				kind, _ := res.Rows[i][5].(string)
				event, _ := res.Rows[i][6].(string)
				out = append(out, gapspec.Gap{Destination: d, Range: coverage.Range{Start: uint64(r.Start), End: uint64(r.End)}, Kind: kind, Event: event})
			}
			return out
		}
		p := Params{Reference: c.Reference, Sink: c.Filter.Sink, Topic: c.Filter.Topic, Partition: c.Filter.Partition, Extents: c.Extents, Sinks: c.Sinks, TopicSinks: c.TopicSinks}
		summary, err := db.Run(ctx, "summary", p)
		if err != nil {
			t.Fatalf("summary %+v: %v", p, err)
		}
		if !slices.Equal(summary.Columns, gapspec.SummaryColumns) {
			t.Fatalf("summary columns %v, want %v", summary.Columns, gapspec.SummaryColumns)
		}
		return gapspec.Result{
			Gaps:    run(p),
			Holes:   run(Params{Reference: c.Reference, Sink: c.Reference, Extents: c.Extents}),
			Summary: catalogtest.CellText(summary.Rows),
		}
	})
}
