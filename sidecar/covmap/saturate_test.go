package covmap

import (
	"context"
	"math"
	"net/http/httptest"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// fixed is a Source and a PendingSource of given contents.
type fixed struct {
	committed Committed
	pending   []Pending
}

func (f fixed) Committed(context.Context) (Committed, error) { return f.committed, nil }
func (f fixed) Pending(context.Context) ([]Pending, error)   { return f.pending, nil }

// The map's sums of missing and pending batches stop at 2^64-1, as the gap
// metrics' do, rather than wrap: a sink missing 2^64+5 batches over two
// partitions shows the most a uint64 holds, never 5.
func TestMapSumsSaturate(t *testing.T) {
	d0 := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 0}
	d1 := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 1}
	whole := coverage.Range{Start: 0, End: math.MaxUint64} // 2^64-1 batches
	six := coverage.Range{Start: 0, End: 6}
	src := fixed{
		committed: Committed{Reference: coverage.RawSink, Gaps: []Gap{{Destination: d0, Range: whole}, {Destination: d1, Range: six}}},
		pending:   []Pending{{Destination: d0, Ranges: []coverage.Range{whole}}, {Destination: d1, Ranges: []coverage.Range{six}}},
	}
	handler, err := Handler(Options{Source: src, Pending: src, CacheFor: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()
	for _, path := range []string{"/v1/map", "/v1/map?sink=lake", "/v1/map?topic=orders"} {
		v, _ := getMap(t, srv.URL+path)
		if len(v.Sinks) != 1 || len(v.Topics) != 1 {
			t.Fatalf("%s: sinks %+v, topics %+v; want lake and orders", path, v.Sinks, v.Topics)
		}
		for what, a := range map[string]agg{"totals": v.Totals, "sink lake": v.Sinks[0].agg, "topic orders": v.Topics[0].agg} {
			if a.MissingBatches != math.MaxUint64 || a.PendingBatches != math.MaxUint64 {
				t.Errorf("%s: %s: missing %d, pending %d batches; want both %d (2^64+5 saturated)", path, what, a.MissingBatches, a.PendingBatches, uint64(math.MaxUint64))
			}
		}
	}
}
