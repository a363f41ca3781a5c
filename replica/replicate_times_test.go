package replica_test

import (
	"context"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/replica"
)

// When one destination of a sink grows, Replicate rewrites the sink's rows;
// the ranges that did not change keep their recorded_at, so the lag of an
// idle destination is not restamped with the replication's time.
func TestReplicateKeepsTimesOfIdleDestinations(t *testing.T) {
	ctx := context.Background()
	primary, table := tabletest.EmbeddedTable(t), tabletest.EmbeddedTable(t)
	p0 := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 0}
	p1 := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 1}
	if err := primary.Append(ctx, durable.Checkpoint{Name: "c1", Writer: "pod", Ranges: []coverage.DestinationRanges{
		{Destination: p0, Ranges: []coverage.Range{{Start: 0, End: 10}}},
		{Destination: p1, Ranges: []coverage.Range{{Start: 0, End: 10}}},
	}}); err != nil {
		t.Fatal(err)
	}
	opts := replica.Options{Writer: "mirror-job"}
	if _, err := replica.Replicate(ctx, primary, table, opts); err != nil {
		t.Fatal(err)
	}
	idleAt := func() time.Time {
		loaded, err := table.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var at time.Time
		if err := iceberg.ReadRows(ctx, loaded, durable.Filter{}, true, func(r iceberg.Row) error {
			if r.Destination == p1 && r.RecordedAt.After(at) {
				at = r.RecordedAt
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return at
	}
	before := idleAt()
	time.Sleep(50 * time.Millisecond)
	// Only partition 0 grows.
	if err := primary.Append(ctx, durable.Checkpoint{Name: "c2", Writer: "pod", Ranges: []coverage.DestinationRanges{
		{Destination: p0, Ranges: []coverage.Range{{Start: 10, End: 20}}},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := replica.Replicate(ctx, primary, table, opts); err != nil {
		t.Fatal(err)
	}
	if after := idleAt(); !after.Equal(before) {
		t.Errorf("the idle destination %s was recorded at %s, and at %s after a replication that did not grow it", p1, before, after)
	}
}
