package local

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/covmirror/covmirror/coverage"
)

// holdFS holds Pebble's background work (a compaction, a table-stats scan)
// when it opens a table, until released, so that a test can put that work
// in flight across a failed Open's cleanup.
type holdFS struct {
	vfs.FS
	mu      sync.Mutex
	holding bool
	release chan struct{}
	held    atomic.Int32
}

func isBackground(fn string) bool {
	return strings.HasSuffix(fn, "pebble/v2.(*DB).compact") || strings.HasSuffix(fn, "pebble/v2.(*DB).collectTableStats")
}

func (h *holdFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	h.mu.Lock()
	holding := h.holding
	h.mu.Unlock()
	if holding && strings.HasSuffix(name, ".sst") && onStack(isBackground) {
		h.held.Add(1)
		<-h.release
	}
	return h.FS.Open(name, opts...)
}

func (h *holdFS) hold(on bool) {
	h.mu.Lock()
	h.holding = on
	h.mu.Unlock()
}

// TestFailedOpenLeavesNoBackgroundWork: Open fails after Pebble flushed the
// replayed WAL into a fourth L0 table, the point where Pebble picks a
// compaction (and loads the new table's stats). Pebble's Open cleanup does
// not wait for that work: it closed the file cache under it, and the
// compaction crashed the process with an integer divide by zero in the file
// cache. Now nothing runs before Open succeeds: the failed Open leaves no
// goroutine touching its files, and the next Open runs the compaction.
func TestFailedOpenLeavesNoBackgroundWork(t *testing.T) {
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	hold := &holdFS{FS: vfs.NewMem(), release: make(chan struct{})}
	var failRename, returned atomic.Bool
	var renameFailed, late atomic.Int32
	var lateOps sync.Map
	fs := errorfs.Wrap(hold, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if returned.Load() {
			late.Add(1)
			lateOps.Store(fmt.Sprintf("%d %s", op.Kind, op.Path), true)
		}
		// Renaming the OPTIONS file into place comes after the replay
		// flush in Pebble's Open.
		if failRename.Load() && op.Kind == errorfs.OpRename && strings.Contains(op.Path, "temporary.") {
			renameFailed.Add(1)
			return errorfs.ErrInjected
		}
		return nil
	}))
	opts := Options{Dir: "/store", FS: fs, CommitDelay: -1}
	// Each session is closed without a flush, so each reopen flushes the
	// last one's WAL into one more L0 table; the tables' key spans overlap.
	// The fifth Open's flush makes the fourth: L0CompactionThreshold. The
	// last session merges ranges, so its table is mostly deletions, whose
	// stats Pebble loads on a goroutine of its own.
	var want coverage.RangeSet
	for session := range uint64(4) {
		s := openTemp(t, opts)
		for i := range uint64(20) {
			r := coverage.Range{Start: 10*i + 2*session, End: 10*i + 2*session + 1}
			record(t, s, d, r.Start, r.End)
			_ = want.Add(r)
		}
		if session == 3 {
			for i := range uint64(20) {
				r := coverage.Range{Start: 10 * i, End: 10*i + 8}
				record(t, s, d, r.Start, r.End)
				_ = want.Add(r)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}

	failRename.Store(true)
	hold.hold(true)
	_, err := Open(opts)
	returned.Store(true)
	close(hold.release)
	if renameFailed.Load() == 0 || !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "injected error") {
		t.Fatalf("Open with the OPTIONS rename failing: %v (renames failed: %d); want ErrUnavailable from the injected error",
			err, renameFailed.Load())
	}
	if strings.Contains(err.Error(), "stays locked") {
		t.Fatalf("Open: %v; nothing had to be parked", err)
	}
	time.Sleep(200 * time.Millisecond) // what was held goes on now, on the old code
	if n := hold.held.Load(); n > 0 {
		t.Errorf("%d compactions or table-stats loads of the failed Open's Pebble were in flight when it failed", n)
	}
	if n := late.Load(); n > 0 {
		var ops []string
		lateOps.Range(func(k, _ any) bool { ops = append(ops, k.(string)); return true })
		t.Errorf("%d file operations after the failed Open returned: %v", n, ops)
	}

	// The same store opens, and the compaction it needs runs afterwards.
	returned.Store(false)
	failRename.Store(false)
	hold.hold(false)
	s := openTemp(t, opts)
	defer s.Close()
	deadline := time.Now().Add(10 * time.Second)
	for s.db.Metrics().Compact.Count == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no compaction ran after the reopen; L0 has %d tables", s.db.Metrics().Levels[0].TablesCount)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if covered, _ := s.Covered(ctx, d); !covered.Equal(&want) {
		t.Fatalf("after the failed Open and a reopen, the store covers %s; want %s", covered.String(), want.String())
	}
}
