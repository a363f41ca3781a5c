package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/covmirror/covmirror/coverage"
)

// countingLog renders records with slog's text handler, as the command
// does, and counts them.
type countingLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
	n   atomic.Int64
	h   slog.Handler
}

func newCountingLog() *countingLog {
	c := &countingLog{}
	c.h = slog.NewTextHandler(&lockedWriter{c}, &slog.HandlerOptions{Level: slog.LevelInfo})
	return c
}

type lockedWriter struct{ c *countingLog }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	return w.c.buf.Write(p)
}

func (c *countingLog) Enabled(ctx context.Context, l slog.Level) bool { return c.h.Enabled(ctx, l) }
func (c *countingLog) Handle(ctx context.Context, r slog.Record) error {
	c.n.Add(1)
	return c.h.Handle(ctx, r)
}
func (c *countingLog) WithAttrs(as []slog.Attr) slog.Handler { return &attrsLog{c, c.h.WithAttrs(as)} }
func (c *countingLog) WithGroup(g string) slog.Handler       { return &attrsLog{c, c.h.WithGroup(g)} }

type attrsLog struct {
	c *countingLog
	slog.Handler
}

func (a *attrsLog) Handle(ctx context.Context, r slog.Record) error {
	a.c.n.Add(1)
	return a.Handler.Handle(ctx, r)
}

func (c *countingLog) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// fullTables fails, once armed, every creation (or every write) of a Pebble
// table with ENOSPC, as a full disk does, and counts the tables Pebble
// tries to create.
type fullTables struct {
	armed   atomic.Bool
	onWrite bool // fail the table's writes instead of its creation
	creates atomic.Int64
}

func (f *fullTables) wrap(fs vfs.FS) vfs.FS {
	return errorfs.Wrap(fs, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !strings.HasSuffix(op.Path, ".sst") {
			return nil
		}
		if op.Kind == errorfs.OpCreate {
			f.creates.Add(1)
		}
		if !f.armed.Load() {
			return nil
		}
		switch {
		case !f.onWrite && op.Kind == errorfs.OpCreate:
			return &os.PathError{Op: "open", Path: op.Path, Err: syscall.ENOSPC}
		case f.onWrite && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpFileWriteAt):
			return &os.PathError{Op: "write", Path: op.Path, Err: syscall.ENOSPC}
		}
		return nil
	}))
}

// returnsWithin runs fn and fails the test if it has not returned after a
// generous bound: nothing it does may wait for Pebble work that can no
// longer finish.
func returnsWithin[T any](t *testing.T, what string, fn func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- fn() }()
	select {
	case v := <-done:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return: it waits for a Pebble instance that can no longer finish", what)
		panic("unreachable")
	}
}

// quiet checks that the failed instance has stopped: after a pause, no
// table was created and nothing was logged, and the log so far is bounded
// and free of stack traces.
func quiet(t *testing.T, f *fullTables, log *countingLog) {
	t.Helper()
	c0, n0 := f.creates.Load(), log.n.Load()
	time.Sleep(200 * time.Millisecond)
	c1, n1 := f.creates.Load(), log.n.Load()
	if c1 != c0 || n1 != n0 {
		t.Fatalf("the failed store's Pebble goes on: %d tables created and %d log records in 200ms after it failed", c1-c0, n1-n0)
	}
	text := log.text()
	if n1 > 6 || strings.Contains(text, "stack trace") || strings.Contains(text, ".go:") {
		t.Fatalf("%d log records after the failure (want a handful, without stacks):\n%.3000s", n1, text)
	}
	if !strings.Contains(text, "no space left on device") {
		t.Fatalf("the log does not name the failure:\n%s", text)
	}
}

// reopenCovers opens a crash clone of mem (what was synced) without faults
// and checks that it covers want: records acknowledged before the failure
// stay where they were.
func reopenCovers(t *testing.T, mem *vfs.MemFS, d coverage.Destination, want int) {
	t.Helper()
	s := openTemp(t, Options{Dir: "/store", FS: mem.CrashClone(vfs.CrashCloneCfg{}), CommitDelay: -1})
	covered, err := s.Covered(ctx, d)
	if err != nil || covered.Len() != want {
		t.Fatalf("reopened after the failure: covers %s (%v); want the %d ranges recorded before", covered.String(), err, want)
	}
}

func closeWaitForever(t *testing.T) {
	old := closeWait
	closeWait = time.Hour // Close must not need it: nothing is left to finish
	t.Cleanup(func() { closeWait = old })
}

// TestFullDiskInOpenFlushStopsPebble: Open replays the WAL into a flush
// whose table cannot be created or written (ENOSPC). Pebble reports that as
// a background error and retried the flush at once, for ever, creating a
// table and logging a stack trace per retry, while Open waited out
// closeWait and left the instance spinning. Now the first failed flush
// parks: Open fails at once with the store's failure, no table is created
// and nothing logged afterwards, and what was recorded before is intact.
func TestFullDiskInOpenFlushStopsPebble(t *testing.T) {
	closeWaitForever(t)
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	for _, onWrite := range []bool{false, true} {
		t.Run(fmt.Sprintf("onWrite=%v", onWrite), func(t *testing.T) {
			mem := populatedMem(t, d)
			f := &fullTables{onWrite: onWrite}
			f.armed.Store(true)
			log := newCountingLog()
			err := returnsWithin(t, "Open", func() error {
				_, err := Open(Options{Dir: "/store", FS: f.wrap(mem), CommitDelay: -1, Logger: slog.New(log)})
				return err
			})
			if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "no space left on device") ||
				!strings.Contains(err.Error(), "stays locked until this process exits") {
				t.Fatalf("Open: %v; want ErrUnavailable naming the full disk and that the directory stays locked", err)
			}
			if f.creates.Load() == 0 {
				t.Fatal("Open created no table: the test no longer reaches the replay's flush")
			}
			quiet(t, f, log)
			if n := f.creates.Load(); n > 3 {
				t.Fatalf("Pebble tried to create %d tables: the failed flush was retried", n)
			}
			reopenCovers(t, mem, d, 20)
		})
	}
}

// TestFullDiskInFlushStopsPebble: a running store's flush cannot create or
// write its table. The store fails, the flush parks instead of being
// retried, Record and Close return the failure at once, and the records
// acknowledged before (synced) survive.
func TestFullDiskInFlushStopsPebble(t *testing.T) {
	closeWaitForever(t)
	d := coverage.Destination{Sink: "raw", Topic: "orders"}
	for _, onWrite := range []bool{false, true} {
		t.Run(fmt.Sprintf("onWrite=%v", onWrite), func(t *testing.T) {
			mem := vfs.NewCrashableMem()
			f := &fullTables{onWrite: onWrite}
			log := newCountingLog()
			s, err := Open(Options{Dir: "/store", FS: f.wrap(mem), Sync: true, Logger: slog.New(log)})
			if err != nil {
				t.Fatal(err)
			}
			for i := range uint64(20) {
				record(t, s, d, 2*i, 2*i+1)
			}
			f.armed.Store(true)
			created := f.creates.Load()
			err = returnsWithin(t, "a flush", func() error { return s.call(func() error { return s.db.Flush() }) })
			if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "no space left on device") {
				t.Fatalf("flush on a full disk: %v; want the store's failure naming the full disk", err)
			}
			if f.creates.Load() == created {
				t.Fatal("the flush created no table: the test no longer reaches it")
			}
			if err := s.Record(ctx, d, coverage.Range{Start: 100, End: 101}); !errors.Is(err, coverage.ErrUnavailable) {
				t.Fatalf("record after the failure: %v", err)
			}
			err = returnsWithin(t, "Close", s.Close)
			if !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), "stays locked") {
				t.Fatalf("close: %v", err)
			}
			quiet(t, f, log)
			if n := f.creates.Load() - created; n > 3 {
				t.Fatalf("Pebble tried to create %d tables after the disk filled: the failed flush was retried", n)
			}
			reopenCovers(t, mem, d, 20)
		})
	}
}
