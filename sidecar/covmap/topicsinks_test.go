package covmap

import (
	"context"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// TestTableSourceTopicSinks: lake is written orders only. Named for every
// topic, the map draws it missing all of clicks (a whole red bar); named
// for orders alone, nothing; warehouse, named for clicks with no rows of
// it, is drawn missing all of clicks.
func TestTableSourceTopicSinks(t *testing.T) {
	ctx := context.Background()
	table := tabletest.EmbeddedTable(t)
	var rows []coverage.DestinationRanges
	for _, sink := range []string{"raw", "pg", "es", "lake"} {
		rows = append(rows, coverage.DestinationRanges{Destination: coverage.Destination{Sink: sink, Topic: "orders"}, Ranges: []coverage.Range{{Start: 0, End: 10}}})
		if sink != "lake" {
			rows = append(rows, coverage.DestinationRanges{Destination: coverage.Destination{Sink: sink, Topic: "clicks"}, Ranges: []coverage.Range{{Start: 0, End: 500}}})
		}
	}
	if err := table.Append(ctx, durable.Checkpoint{Name: "c1", Writer: "test", Ranges: rows}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		src  TableSource
		want []string
	}{
		{TableSource{Sinks: []string{"pg", "es", "lake"}}, []string{`lake/clicks/0`}},
		{TableSource{Sinks: []string{"pg", "es"}, TopicSinks: map[string][]string{"orders": {"pg", "es", "lake"}}}, nil},
		{TableSource{TopicSinks: map[string][]string{"orders": {"lake"}, "clicks": {"warehouse"}}}, []string{`warehouse/clicks/0`}},
	} {
		c.src.Table = table
		got, err := c.src.Committed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var drawn []string
		for _, g := range got.Gaps {
			if g.Range != (coverage.Range{Start: 0, End: 500}) {
				t.Errorf("%+v: gap %+v, want all of clicks", c.src, g)
			}
			drawn = append(drawn, g.Destination.String())
		}
		if !slices.Equal(drawn, c.want) {
			t.Errorf("sinks %q, per topic %q: gaps of %q, want %q", c.src.Sinks, c.src.TopicSinks, drawn, c.want)
		}
	}
}
