package local

import (
	"errors"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/covmirror/covmirror/coverage"
)

// populatedMem is a store on MemFS whose last records are only in the WAL:
// the next Open replays it and flushes, on a Pebble goroutine, into a new
// MANIFEST (which moves the MANIFEST marker).
func populatedMem(t *testing.T, d coverage.Destination) *vfs.MemFS {
	t.Helper()
	mem := vfs.NewCrashableMem()
	s := openTemp(t, Options{Dir: "/store", FS: mem, CommitDelay: -1})
	for i := range uint64(20) {
		record(t, s, d, 2*i, 2*i+1)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return mem
}

// TestFailedOpenReleasesTheLock: a write that fails during Open, whichever
// it is, fails Open and, once Pebble is closed, leaves the directory
// unlocked, so that the next Open in the same process works and finds what
// was recorded. Only when a Pebble goroutine had to be parked (it failed
// where Pebble cannot be closed) does the directory stay locked, and then
// the failed Open said so.
func TestFailedOpenReleasesTheLock(t *testing.T) {
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	for _, populated := range []bool{false, true} {
		failed, kept := 0, 0
		for nth := 0; ; nth++ {
			mem := vfs.NewCrashableMem()
			if populated {
				mem = populatedMem(t, d)
			}
			var seen atomic.Int32
			fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
				if op.Kind.ReadOrWrite() != errorfs.OpIsWrite || op.Kind == errorfs.OpLock || op.Kind == errorfs.OpMkdirAll {
					return nil
				}
				if seen.Add(1) == int32(nth+1) {
					return errorfs.ErrInjected
				}
				return nil
			}))
			s, err := Open(Options{Dir: "/store", FS: fs, CommitDelay: -1})
			if err == nil {
				_ = s.Close()
				if int(seen.Load()) <= nth { // no fault left to inject: every write was tried
					break
				}
				continue
			}
			failed++
			if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "/store") {
				t.Fatalf("populated=%v, write fault %d: Open: %v; want ErrUnavailable naming the directory", populated, nth, err)
			}
			s2, err2 := Open(Options{Dir: "/store", FS: mem, CommitDelay: -1})
			if strings.Contains(err.Error(), "stays locked until this process exits") {
				kept++
				if !errors.Is(err2, ErrLocked) || !strings.Contains(err2.Error(), "restart the process") {
					t.Fatalf("populated=%v, write fault %d: Open said the directory stays locked (%v), the next: %v", populated, nth, err, err2)
				}
				continue
			}
			if err2 != nil {
				t.Fatalf("populated=%v, write fault %d: Open failed (%v), and the next Open, without faults: %v", populated, nth, err, err2)
			}
			if covered, _ := s2.Covered(ctx, d); populated && covered.Len() != 20 {
				t.Fatalf("populated=%v, write fault %d: after the failed Open, the store covers %s", populated, nth, covered.String())
			}
			if err := s2.Close(); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("populated=%v: %d write faults failed Open, %d of them left the directory locked", populated, failed, kept)
		if failed == 0 {
			t.Fatalf("populated=%v: no fault failed Open", populated)
		}
	}
}

// TestDirSyncFailureInBackgroundFlushFailsTheStore: the directory's sync
// fails while Pebble moves the MANIFEST marker in the flush Open waits for,
// on Pebble's own goroutine, where atomicfs.Marker.Move panics on it and
// the panic used to kill the process. The goroutine parks instead: Open
// fails with the store's failure, naming the directory, the cause and that
// it stays locked until the process restarts.
func TestDirSyncFailureInBackgroundFlushFailsTheStore(t *testing.T) {
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	mem := populatedMem(t, d)
	var hit atomic.Int32
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if op.Kind != errorfs.OpFileSync || op.Path != "/store" {
			return nil
		}
		stack := string(debug.Stack())
		if strings.Contains(stack, "atomicfs.(*Marker).Move") && strings.Contains(stack, "pebble/v2.(*DB).flush1") {
			hit.Add(1)
			return errorfs.ErrInjected
		}
		return nil
	}))
	_, err := Open(Options{Dir: "/store", FS: fs, CommitDelay: -1})
	if hit.Load() == 0 {
		t.Fatalf("no directory sync failed in a flush's marker move (Open: %v): the test no longer reaches the path", err)
	}
	if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "sync /store") ||
		!strings.Contains(err.Error(), "injected error") || !strings.Contains(err.Error(), "stays locked until this process exits") {
		t.Fatalf("Open: %v; want ErrUnavailable naming the failed sync of /store, and that the directory stays locked", err)
	}
}

// TestWALRotationFailureFailsTheStore: closing the old WAL fails while
// Pebble rotates it (its sync fails), where Pebble panics with its mutex
// released and the caller's deferred unlock used to kill the process. The
// store fails instead, the call returns that failure, and Close returns.
func TestWALRotationFailureFailsTheStore(t *testing.T) {
	var on atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if on.Load() && strings.HasSuffix(op.Path, ".log") &&
			(op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo) {
			return errorfs.ErrInjected
		}
		return nil
	}))
	s := openTemp(t, Options{Dir: "/store", FS: fs, CommitDelay: -1})
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	record(t, s, d, 0, 10)
	on.Store(true)
	// A batch of half a memtable or more rotates the WAL before it is
	// written; without Sync nothing syncs the WAL before that.
	err := s.call(func() error { return s.db.Set([]byte("big"), make([]byte, 4<<20), pebble.NoSync) })
	if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), ".log") || !strings.Contains(err.Error(), "injected error") {
		t.Fatalf("a write rotating a WAL whose sync fails: %v; want the store's failure naming the WAL", err)
	}
	if err := s.Record(ctx, d, coverage.Range{Start: 10, End: 11}); !errors.Is(err, coverage.ErrUnavailable) {
		t.Fatalf("record after the failure: %v", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "stays locked") {
			t.Fatalf("close: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("close of the failed store hangs")
	}
}
