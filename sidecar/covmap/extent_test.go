package covmap

import (
	"context"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// TestTableSourceExtents: with raw's and the lake's records of orders/0's
// first ten batches lost on every tier, the map shows raw's hole [0,10)
// only once it has the source's acked extent [0,20).
func TestTableSourceExtents(t *testing.T) {
	ctx := context.Background()
	table := tabletest.EmbeddedTable(t)
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders"}
	later := []coverage.Range{{Start: 10, End: 20}}
	if err := table.Append(ctx, durable.Checkpoint{Name: "c1", Writer: "test", Ranges: []coverage.DestinationRanges{
		{Destination: raw, Ranges: later}, {Destination: raw.WithSink("lake"), Ranges: later}}}); err != nil {
		t.Fatal(err)
	}
	var extents []coverage.Extent
	src := TableSource{Table: table, Extents: func() []coverage.Extent { return extents }}
	for _, c := range []struct {
		extents []coverage.Extent
		want    []coverage.Range
	}{
		{nil, nil},
		{[]coverage.Extent{{Topic: "orders", End: 20}}, []coverage.Range{{Start: 0, End: 10}}},
	} {
		extents = c.extents
		got, err := src.Committed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var holes []coverage.Range
		for _, g := range got.Gaps {
			if g.Destination != raw {
				t.Fatalf("extents %v: gap %+v, want only raw's", c.extents, g)
			}
			holes = append(holes, g.Range)
		}
		if !slices.Equal(holes, c.want) {
			t.Fatalf("extents %v: raw's holes %v, want %v", c.extents, holes, c.want)
		}
	}
}
