package durable

import (
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// TestDigestIsStable: the digest is stored in every tier beside a
// checkpoint's name and compared on a retry after a restart, so it must
// never change between versions: a changed digest would refuse every
// checkpoint of unknown outcome as ErrNameReused. The value was computed
// by the first version that stored it. Order and overlap within a
// destination do not change it; another range does.
func TestDigestIsStable(t *testing.T) {
	lake := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 3}
	raw := coverage.Destination{Sink: "raw", Topic: "orders"}
	rs := []coverage.DestinationRanges{
		{Destination: lake, Ranges: []coverage.Range{{Start: 10, End: 20}, {Start: 5, End: 12}}},
		{Destination: raw, Ranges: []coverage.Range{{Start: 0, End: 1}}},
	}
	const want = "187f92f5ec48b04907fe041101c96745"
	if got := Digest("append", "pod-a", rs, 3); got != want {
		t.Fatalf("Digest = %s, want %s: the stored digests of every tier would no longer match", got, want)
	}
	reordered := []coverage.DestinationRanges{
		{Destination: raw, Ranges: []coverage.Range{{Start: 0, End: 1}}},
		{Destination: lake, Ranges: []coverage.Range{{Start: 5, End: 20}}},
	}
	if got := Digest("append", "pod-a", reordered, 3); got != want {
		t.Fatalf("the same coverage in another order: %s, want %s", got, want)
	}
	rs[1].Ranges[0].End = 2
	if got := Digest("append", "pod-a", rs, 3); got == want {
		t.Fatal("another range gave the same digest")
	}
}
