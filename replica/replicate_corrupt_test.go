package replica_test

import (
	"context"
	"errors"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/replica"
)

// A row of sink "other" that another engine filed under lake's key makes
// Replicate leave lake as it is (ErrCorrupt), and the sinks after it are
// mirrored all the same.
func TestReplicateGoesOnPastACorruptSink(t *testing.T) {
	ctx := context.Background()
	primary, table := tabletest.EmbeddedTable(t), tabletest.EmbeddedTable(t)
	lake := coverage.Destination{Sink: "lake", Topic: "orders"}
	search := coverage.Destination{Sink: "search", Topic: "orders"}
	if err := primary.Append(ctx, durable.Checkpoint{Name: "c1", Writer: "pod", Ranges: []coverage.DestinationRanges{
		{Destination: lake, Ranges: []coverage.Range{{Start: 0, End: 10}}},
		{Destination: search, Ranges: []coverage.Range{{Start: 0, End: 10}}},
	}}); err != nil {
		t.Fatal(err)
	}
	opts := replica.Options{Writer: "mirror-job"}
	if _, err := replica.Replicate(ctx, primary, table, opts); err != nil {
		t.Fatal(err)
	}
	row := tabletest.Valid("other", "orders", 0, 0, 5)
	lakeKey := iceberg.PathKey("lake")
	row.SinkKey = &lakeKey
	if err := tabletest.AppendForeign(t, table, row); err != nil {
		t.Fatal(err)
	}
	// Only search grows in the primary.
	if err := primary.Append(ctx, durable.Checkpoint{Name: "c2", Writer: "pod", Ranges: []coverage.DestinationRanges{
		{Destination: search, Ranges: []coverage.Range{{Start: 10, End: 20}}},
	}}); err != nil {
		t.Fatal(err)
	}
	res, err := replica.Replicate(ctx, primary, table, opts)
	t.Logf("Replicate: %+v, %v", res, err)
	if !errors.Is(err, coverage.ErrCorrupt) || res.Corrupt != 1 || res.Replaced != 1 {
		t.Errorf("Replicate: %+v, %v; want lake left as corrupt (ErrCorrupt) and search replaced", res, err)
	}
	got, cerr := table.Coverage(ctx, durable.Filter{Sink: "search"})
	if cerr != nil {
		t.Fatal(cerr)
	}
	if s := got[search]; s == nil || !s.ContainsRange(coverage.Range{Start: 10, End: 20}) {
		t.Errorf("search, which the stray row does not touch, was not mirrored: table has %v", s)
	}
}
