package local

import (
	"runtime"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// TestMillionInOrderRecordsLeaveOneKey: merging keeps one key per
// destination, and the heap does not grow with the number of records.
func TestMillionInOrderRecordsLeaveOneKey(t *testing.T) {
	// The smallest memtable: built without cgo, Pebble's memtables live in
	// the Go heap, and how full one happens to be is not growth.
	s := openTemp(t, Options{MemTableBytes: 1 << 20})
	defer s.Close()
	dests := []coverage.Destination{{Sink: "lake", Topic: "orders"}, {Sink: "search", Topic: "orders"}}
	const n, warmup = 1_000_000, 100_000
	var before, after runtime.MemStats
	for b := uint64(0); b < n; b++ {
		if b == warmup {
			settle(t, s)
			runtime.ReadMemStats(&before)
		}
		record(t, s, dests[b%2], b/2, b/2+1)
	}
	settle(t, s)
	runtime.ReadMemStats(&after)
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

// settle writes what is staged, waits for Pebble's flushes and compactions
// to finish (their buffers are transient, and on a loaded machine one may be
// running at either reading) and collects garbage twice, so that pooled
// objects are gone too.
func settle(t *testing.T, s *Store) {
	t.Helper()
	s.mu.Lock()
	err := s.flushLocked()
	s.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		m := s.db.Metrics()
		if m.Flush.NumInProgress == 0 && m.Compact.NumInProgress == 0 {
			break
		}
		if i == 6000 {
			t.Fatalf("Pebble's background work did not finish: %d flushes, %d compactions in progress",
				m.Flush.NumInProgress, m.Compact.NumInProgress)
		}
		time.Sleep(10 * time.Millisecond)
	}
	runtime.GC()
	runtime.GC()
}
