package recovery_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/recovery"
)

// A rebalancing owner of orders/0 hands Resume the broker's committed
// position (batch 20: the source acked [0,20)). The previous owner's
// records of the first ten batches never reached the table, on raw or the
// lake, so without the extent nothing shows them missing; with it raw's
// [0,10) is to verify. The lake's share is not replay work yet: it is
// measured against raw's committed coverage, and follows on the next Resume
// once the verification re-recorded what raw holds.
func ExampleResume() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "covmirror-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	props, err := iceberg.EmbeddedProps(dir)
	if err != nil {
		log.Fatal(err)
	}
	cat, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		log.Fatal(err)
	}
	table, err := iceberg.Open(ctx, cat, iceberg.Options{})
	if err != nil {
		log.Fatal(err)
	}
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders"}
	later := []coverage.Range{{Start: 10, End: 20}}
	if err := table.Append(ctx, durable.Checkpoint{Name: "pod-a/1", Writer: "pod-a", Ranges: []coverage.DestinationRanges{
		{Destination: raw, Ranges: later}, {Destination: raw.WithSink("lake"), Ranges: later}}}); err != nil {
		log.Fatal(err)
	}
	acked := []coverage.Extent{{Topic: "orders", Partition: 0, End: 20}} // the broker's committed position
	for _, extents := range [][]coverage.Extent{nil, acked} {
		assignments, err := recovery.Resume(ctx, table, "orders", 0, recovery.ResumeOptions{Sinks: []string{"lake"}, Extents: extents})
		if err != nil {
			log.Fatal(err)
		}
		for _, a := range assignments {
			fmt.Println(len(extents), a.Kind, a.Destination, a.Replay)
		}
	}
	// Output:
	// 0 verify-reference raw/orders/0 []
	// 0 replay lake/orders/0 []
	// 1 verify-reference raw/orders/0 [[0,10)]
	// 1 replay lake/orders/0 []
}
