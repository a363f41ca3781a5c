package local

import (
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/covmirror/covmirror/coverage"
)

// TestGarbledSSTIsCorrupt: a store whose tables are garbage (its MANIFEST
// intact) fails Open with ErrCorrupt instead of Pebble's Fatalf killing the
// process, and RecoverCorrupt moves it aside.
func TestGarbledSSTIsCorrupt(t *testing.T) {
	dir := populated(t)
	db, err := pebble.Open(dir, quietPebble())
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(db.Flush(), db.Close()); err != nil {
		t.Fatal(err)
	}
	tables, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(tables) == 0 {
		t.Fatal("no table to garble")
	}
	for _, path := range tables {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		junk := []byte(strings.Repeat("garbled\xff", int(info.Size())/8+1))[:info.Size()]
		if err := os.WriteFile(path, junk, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Open(Options{Dir: dir})
	if !errors.Is(err, coverage.ErrCorrupt) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "move the directory aside") {
		t.Fatalf("open of a store with garbled tables: %v; want ErrCorrupt naming %s and the remedy", err, dir)
	}
	s, err := Open(Options{Dir: dir, RecoverCorrupt: true})
	if err != nil {
		t.Fatalf("recovering: %v", err)
	}
	defer s.Close()
	if ds, _ := s.Destinations(ctx); len(ds) != 0 {
		t.Fatalf("recovered store is not empty: %v", ds)
	}
	if aside, _ := filepath.Glob(dir + ".corrupt-*"); len(aside) != 1 {
		t.Fatalf("the corrupt store was not kept aside: %v", aside)
	}
}

// injector fails write operations with ENOSPC while on.
type injector struct {
	mu   sync.Mutex
	on   bool
	only string // when set, only paths containing it fail
	hit  int
}

func (i *injector) set(on bool) {
	i.mu.Lock()
	i.on = on
	i.mu.Unlock()
}

func (i *injector) String() string { return "enospc" }

func (i *injector) MaybeError(op errorfs.Op) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.on || op.Kind.ReadOrWrite() != errorfs.OpIsWrite || !strings.Contains(op.Path, i.only) {
		return nil
	}
	i.hit++
	return &fs.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
}

// TestDiskFullFailsTheStoreClearly: a full disk under the store (the WAL,
// and the MANIFEST Close's flush installs) makes the store fail with a
// classified error naming the directory and the cause, never a panic,
// with Sync off as with it: every commit writes the WAL. What was recorded
// stays covered in memory and counted unpersisted.
func TestDiskFullFailsTheStoreClearly(t *testing.T) {
	for _, sync := range []bool{false, true} {
		t.Run(map[bool]string{false: "nosync", true: "sync"}[sync], func(t *testing.T) {
			inj := &injector{}
			mem := vfs.NewCrashableMem()
			s := openTemp(t, Options{Dir: "/store", FS: errorfs.Wrap(mem, inj), Sync: sync, CommitDelay: -1})
			d := coverage.Destination{Sink: "raw", Topic: "orders"}
			record(t, s, d, 0, 10)
			inj.set(true)
			err := s.Record(ctx, d, coverage.Range{Start: 10, End: 20})
			// With Sync off too the commit writes the WAL before Record
			// returns (walsync.go): the full disk is met there.
			if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "/store") ||
				!strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), "restart the process") {
				t.Fatalf("record on a full disk: %v; want ErrUnavailable naming /store, the cause and the remedy", err)
			}
			if err := s.Record(ctx, d, coverage.Range{Start: 100, End: 101}); !errors.Is(err, coverage.ErrUnavailable) {
				t.Fatalf("record after the failure: %v", err)
			}
			covered, err := s.Covered(ctx, d)
			if err != nil || !covered.ContainsRange(coverage.Range{Start: 0, End: 20}) || covered.Contains(100) {
				t.Fatalf("covered after the failure: %v, %v; want [0,20) at least, never 100", covered.String(), err)
			}
			if _, err := s.BeginCheckpoint(ctx); !errors.Is(err, coverage.ErrUnavailable) {
				t.Fatalf("begin checkpoint after the failure: %v", err)
			}
			diag, err := s.Diagnostics(ctx)
			if err != nil || diag.Failed == "" || diag.UnpersistedKeys == 0 || diag.LastWriteError == "" {
				t.Fatalf("diagnostics after the failure: %+v, %v", diag, err)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"unpersisted_keys"`) ||
				!strings.Contains(rec.Body.String(), "no space left") {
				t.Fatalf("handler of a failed store: %d %s", rec.Code, rec.Body.String())
			}
			closed := make(chan error, 1)
			go func() { closed <- s.Close() }()
			select {
			case err := <-closed:
				if !errors.Is(err, coverage.ErrUnavailable) {
					t.Fatalf("close of a failed store: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Fatal("close of a failed store hangs")
			}
			// The process restarts: the store reopens from what was synced.
			s2 := openTemp(t, Options{Dir: "/store", FS: mem.CrashClone(vfs.CrashCloneCfg{})})
			defer s2.Close()
			if covered, _ := s2.Covered(ctx, d); !covered.ContainsRange(coverage.Range{Start: 0, End: 10}) && sync {
				t.Fatalf("synced records lost: %v", covered.String())
			}
		})
	}
}

// TestDiskFullInBackgroundFlush: the MANIFEST write of a flush Pebble runs
// on its own goroutine fails, and Pebble calls Fatalf there. The store fails
// and says so, that goroutine parks instead of killing the process, and
// Close returns rather than waiting for it.
func TestDiskFullInBackgroundFlush(t *testing.T) {
	inj := &injector{only: "MANIFEST"}
	s := openTemp(t, Options{Dir: "/store", FS: errorfs.Wrap(vfs.NewMem(), inj)})
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	record(t, s, d, 0, 10)
	s.mu.Lock()
	if err := s.flushLocked(); err != nil {
		t.Fatal(err)
	}
	s.mu.Unlock()
	inj.set(true)
	// On a loaded machine the flush can fail the store before AsyncFlush
	// returns: the call then reports the store's failure, which is what
	// this test waits for below anyway.
	if err := s.call(func() error { _, err := s.db.AsyncFlush(); return err }); err != nil &&
		!(errors.Is(err, coverage.ErrUnavailable) && strings.Contains(err.Error(), "MANIFEST")) {
		t.Fatal(err)
	}
	select {
	case <-s.health.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the failed flush did not fail the store")
	}
	err := s.Record(ctx, d, coverage.Range{Start: 10, End: 11})
	if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "MANIFEST") || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("record after the failure: %v", err)
	}
	if err := s.Close(); !errors.Is(err, coverage.ErrUnavailable) {
		t.Fatalf("close: %v", err)
	}
}

// TestFailedWriteStaysCovered: records staged for the write-behind write
// when the store fails are not dropped: Covered still reports them (their
// sinks acknowledged them), Diagnostics counts them unpersisted with the
// write's error, and Record reports the failure from then on.
func TestFailedWriteStaysCovered(t *testing.T) {
	inj := &injector{only: "MANIFEST"}
	s := openTemp(t, Options{Dir: "/store", FS: errorfs.Wrap(vfs.NewMem(), inj), CommitDelay: 100 * time.Millisecond})
	defer s.Close()
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	record(t, s, d, 0, 10) // staged: the timer writes it in 100ms
	inj.set(true)
	// The flush may fail the store before AsyncFlush returns, and call
	// then returns that failure.
	if err := s.call(func() error { _, err := s.db.AsyncFlush(); return err }); err != nil && !errors.Is(err, coverage.ErrUnavailable) {
		t.Fatal(err)
	}
	<-s.health.done
	deadline := time.Now().Add(5 * time.Second)
	var diag Diagnostics
	for time.Now().Before(deadline) {
		if diag, _ = s.Diagnostics(ctx); diag.LastWriteError != "" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if diag.LastWriteError == "" || diag.UnpersistedKeys == 0 || diag.Failed == "" {
		t.Fatalf("diagnostics: %+v; want the write error, the unpersisted keys and the failure", diag)
	}
	covered, err := s.Covered(ctx, d)
	if err != nil || !covered.ContainsRange(coverage.Range{Start: 0, End: 10}) {
		t.Fatalf("covered: %v, %v; the records staged before the failure must stay covered", covered.String(), err)
	}
	if err := s.Record(ctx, d, coverage.Range{Start: 10, End: 11}); !errors.Is(err, coverage.ErrUnavailable) {
		t.Fatalf("record on a failed store: %v", err)
	}
}

// denyFS refuses to create anything, like a read-only directory.
type denyFS struct{ vfs.FS }

func (f denyFS) deny(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: syscall.EACCES}
}
func (f denyFS) Create(name string, _ vfs.DiskWriteCategory) (vfs.File, error) {
	return nil, f.deny("open", name)
}
func (f denyFS) Lock(name string) (io.Closer, error) { return nil, f.deny("open", name) }

func TestReadOnlyDirectoryIsNotLocked(t *testing.T) {
	check := func(t *testing.T, dir string, err error) {
		t.Helper()
		if !errors.Is(err, ErrNotWritable) || errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) ||
			!strings.Contains(err.Error(), "permission denied") {
			t.Fatalf("open of a read-only directory: %v; want ErrNotWritable naming %s and the cause", err, dir)
		}
	}
	t.Run("injected", func(t *testing.T) {
		_, err := Open(Options{Dir: "/ro", FS: denyFS{vfs.NewMem()}})
		check(t, "/ro", err)
	})
	t.Run("chmod", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root writes through a read-only mode")
		}
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(dir, 0o755)
		_, err := Open(Options{Dir: dir})
		check(t, dir, err)
	})
}

// TestRangePastMaxBatchEndStaysOutOfCheckpoints: a store written before
// Record refused ranges past coverage.MaxBatchEnd opens, keeps the range
// covered, and leaves the part past the limit out of every checkpoint, so
// it cannot block them.
func TestRangePastMaxBatchEndStaysOutOfCheckpoints(t *testing.T) {
	dir := t.TempDir()
	s := openTemp(t, Options{Dir: dir})
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	record(t, s, d, 0, 5)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := pebble.Open(dir, quietPebble())
	if err != nil {
		t.Fatal(err)
	}
	old := coverage.Range{Start: coverage.MaxBatchEnd - 10, End: ^uint64(0) - 1}
	if err := db.Set(rangeKey(nil, kindCovered, d, old.Start), encodeUint64(old.End), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()

	s = openTemp(t, Options{Dir: dir})
	defer s.Close()
	covered, _ := s.Covered(ctx, d)
	if !covered.ContainsRange(old) {
		t.Fatalf("covered %v lost %s", covered.String(), old)
	}
	for i := range 2 {
		cp, err := s.BeginCheckpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i == 1 {
			if cp != nil {
				t.Fatalf("a second checkpoint carries %v", cp.Ranges)
			}
			break
		}
		for _, dr := range cp.Ranges {
			for _, r := range dr.Ranges {
				if r.End > coverage.MaxBatchEnd {
					t.Fatalf("checkpoint carries %s, past the limit", r)
				}
			}
		}
		if err := s.CommitCheckpoint(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	if p := s.PendingBatches(); p != 0 {
		t.Fatalf("%d batches pending after the checkpoint", p)
	}
}
