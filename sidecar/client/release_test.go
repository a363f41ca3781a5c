package client

import (
	"errors"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// Release over either transport checkpoints and drops the partitions'
// local state, every sink's, and Committed then holds what was recorded;
// a refused partition is ErrRejected naming the entry and the rule, and
// releases nothing.
func TestReleaseThroughThePod(t *testing.T) {
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			p := startPod(t, nil, nil)
			c := p.client(t, transport, nil)
			raw0 := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 0}
			raw1 := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 1}
			entries := []coverage.Entry{
				{Destination: raw0, Range: coverage.Range{Start: 0, End: 10}},
				{Destination: raw0.WithSink("lake"), Range: coverage.Range{Start: 0, End: 4}},
				{Destination: raw1, Range: coverage.Range{Start: 0, End: 3}},
			}
			if err := c.Record(ctx, entries); err != nil {
				t.Fatal(err)
			}
			_, err := c.Release(ctx, []coverage.TopicPartition{{Topic: "orders", Partition: 0}, {Topic: "", Partition: 1}})
			var ce *Error
			if !errors.Is(err, ErrRejected) || !errors.As(err, &ce) || ce.Rule != "invalid-destination" || ce.Entry != 1 {
				t.Fatalf("release of an empty topic: %v", err)
			}
			if _, err := c.Release(ctx, []coverage.TopicPartition{{Topic: "a\xffb"}}); !errors.As(err, &ce) || ce.Rule != "invalid-utf8" || ce.Status != 0 {
				t.Fatalf("release of a topic that is not UTF-8: %v", err)
			}
			if got := p.state(t); len(got) != 3 {
				t.Fatalf("refused releases dropped something: %v", got)
			}
			res, err := c.Release(ctx, []coverage.TopicPartition{{Topic: "orders", Partition: 0}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Released, []coverage.Destination{raw0.WithSink("lake"), raw0}) || len(res.Retained) != 0 || res.Checkpoints != 1 || res.Batches != 17 {
				t.Fatalf("release: %+v", res)
			}
			if got := p.state(t); len(got) != 1 || got[raw1] == nil {
				t.Fatalf("local tier after the release: %v", got)
			}
			committed, err := c.Committed(ctx, Filter{Topic: "orders"})
			if err != nil {
				t.Fatal(err)
			}
			if committed[raw0].String() != "{[0,10)}" || committed[raw0.WithSink("lake")].String() != "{[0,4)}" {
				t.Fatalf("committed after the release: %v", committed)
			}
			if res, err := c.Release(ctx, nil); err != nil || res.Released != nil {
				t.Fatalf("release of none: %+v, %v", res, err)
			}
		})
	}
}
