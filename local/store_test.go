package local

import (
	"runtime"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// TestMillionInOrderRecordsLeaveOneKey: merging keeps one key per
// destination, and the heap does not grow with the number of records.
func TestMillionInOrderRecordsLeaveOneKey(t *testing.T) {
	s := openTemp(t, Options{})
	defer s.Close()
	dests := []coverage.Destination{{Sink: "lake", Topic: "orders"}, {Sink: "search", Topic: "orders"}}
	const n, warmup = 1_000_000, 100_000
	var before, after runtime.MemStats
	for b := uint64(0); b < n; b++ {
		if b == warmup {
			runtime.GC()
			runtime.ReadMemStats(&before)
		}
		record(t, s, dests[b%2], b/2, b/2+1)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	s.mu.Lock()
	if err := s.flushLocked(); err != nil {
		t.Fatal(err)
	}
	s.mu.Unlock()
	if keys := countKeys(t, s, kindCovered); keys != len(dests) {
		t.Fatalf("%d in-order records over %d destinations left %d keys", n, len(dests), keys)
	}
	for _, d := range dests {
		set, _ := s.Covered(ctx, d)
		if set.Len() != 1 || set.Batches() != n/2 {
			t.Fatalf("%s: %v", d, set.String())
		}
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 4<<20 {
		t.Fatalf("live heap grew by %d bytes over %d records that leave one range each", grown, n-warmup)
	}
}
