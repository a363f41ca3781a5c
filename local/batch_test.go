package local

import (
	"errors"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/covmirror/covmirror/coverage"
)

// TestRecordBatchFailedWriteCountsNone: with Sync, a RecordBatch whose
// write fails counts none of its entries as recorded. They stay covered in
// memory (the sinks acked them), but a crash loses them, so a count of all
// of them would let a caller resuming from it skip entries that are gone:
// a lead.
func TestRecordBatchFailedWriteCountsNone(t *testing.T) {
	defer func(w time.Duration) { closeWait = w }(closeWait)
	closeWait = time.Second // a Pebble wedged by the failure is left behind
	inj := &injector{}
	mem := vfs.NewCrashableMem()
	s := openTemp(t, Options{Dir: "/store", FS: errorfs.Wrap(mem, inj), Sync: true, CommitDelay: -1})
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	e := coverage.Destination{Sink: "lake", Topic: "orders"}
	if n, err := s.RecordBatch(ctx, []coverage.Entry{{Destination: d, Range: coverage.Range{Start: 0, End: 10}}}); n != 1 || err != nil {
		t.Fatalf("a batch on a healthy store: (%d, %v), want (1, nil)", n, err)
	}
	inj.set(true)
	batch := []coverage.Entry{
		{Destination: d, Range: coverage.Range{Start: 10, End: 20}},
		{Destination: e, Range: coverage.Range{Start: 0, End: 5}},
		{Destination: d, Range: coverage.Range{Start: 30, End: 31}},
	}
	n, err := s.RecordBatch(ctx, batch)
	if n != 0 || !errors.Is(err, coverage.ErrUnavailable) {
		t.Fatalf("a batch whose write fails: (%d, %v), want (0, ErrUnavailable)", n, err)
	}
	// Held in memory all the same: coverage lags the disk, never the sinks.
	if covered, _ := s.Covered(ctx, d); !covered.ContainsRange(coverage.Range{Start: 0, End: 20}) {
		t.Fatalf("covered in memory after the failed write: %v", covered.String())
	}
	_ = s.Close()
	s2 := openTemp(t, Options{Dir: "/store", FS: mem.CrashClone(vfs.CrashCloneCfg{})})
	defer s2.Close()
	covered, _ := s2.Covered(ctx, d)
	if !covered.ContainsRange(coverage.Range{Start: 0, End: 10}) || covered.Contains(30) {
		t.Fatalf("after the crash: %v; want [0,10) synced, 30 lost (the count said so)", covered.String())
	}
}
