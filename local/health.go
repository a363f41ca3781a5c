package local

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"

	"github.com/covmirror/covmirror/coverage"
)

// health is a store's sticky failure. Pebble stops on some faults (a WAL or
// MANIFEST write that fails, corruption found in a background compaction)
// by calling its logger's Fatalf, which must not return: Pebble's state is
// broken at that point. A library may not exit the process, so Fatalf here
// marks the store failed instead, and every later write returns the failure
// (see pebbleLogger.Fatalf for what happens to the goroutine that called it).
type health struct {
	dir    string
	logger *slog.Logger
	done   chan struct{} // closed when the store fails
	once   sync.Once
	err    atomic.Pointer[error]
	// parked counts Pebble goroutines stopped in Fatalf. They hold Pebble's
	// locks for ever, so closing that Pebble instance would block: Close
	// leaves it, and its directory lock, to the process's exit.
	parked atomic.Int32

	mu       sync.Mutex
	lastBgEr string // Pebble's last background error, for Diagnostics
}

func newHealth(dir string, logger *slog.Logger) *health {
	return &health{dir: dir, logger: logger, done: make(chan struct{})}
}

// failed returns the store's failure, or nil.
func (h *health) failed() error {
	if p := h.err.Load(); p != nil {
		return *p
	}
	return nil
}

// fail marks the store failed with class (coverage.ErrCorrupt or
// coverage.ErrUnavailable) and cause. Only the first failure is kept.
func (h *health) fail(class error, cause string) {
	h.once.Do(func() {
		what := "free space or fix the disk, then restart the process: the store reopens from what Pebble wrote, " +
			"and records it had not written are replayed (coverage lags, never leads)"
		if errors.Is(class, coverage.ErrCorrupt) {
			what = remedy
		}
		err := fmt.Errorf("%w: local store %s failed: %s; %s", class, h.dir, cause, what)
		h.err.Store(&err)
		close(h.done)
		h.logger.Error("local store failed: every later write returns this error", "dir", h.dir, "err", err.Error())
	})
}

// backgroundError is Pebble's report of a failed background job, on that
// job's goroutine. Pebble retries a failed flush or compaction at once, for
// ever (pebble v2.1.7, DB.flush and DB.handleCompactFailure: no backoff), so
// a full disk made the instance spin, creating a table and logging the error
// per retry. A failed job therefore fails the store (ErrUnavailable, or
// ErrCorrupt) and parks that goroutine for good (park), which stops the
// instance, as Fatalf does: a flush parks holding Pebble's mutex, and so
// does a compaction. Nothing can finish after that, so Close and a failed
// Open give up on it at once. A flush only writes, and watchFS fails the
// store at the first failed write, so a full disk has failed the store
// already; a compaction that fails reading (an I/O error) fails it here.
//
// The one report that is not a failed job, a failed disk usage query
// (Pebble's statistic after a flush or compaction, not retried), is only
// logged, when it differs from the last one.
func (h *health) backgroundError(err error) {
	msg := err.Error() // not err: a text handler prints Pebble's errors with their stack (%+v)
	h.mu.Lock()
	repeated := h.lastBgEr == msg
	h.lastBgEr = msg
	h.mu.Unlock()
	if onStack(func(fn string) bool { return fn == diskUsageName }) {
		if !repeated {
			h.logger.Warn("local store: Pebble could not query the disk's free space", "dir", h.dir, "err", msg)
		}
		return
	}
	class := coverage.ErrUnavailable
	if pebble.IsCorruptionError(err) {
		class = coverage.ErrCorrupt
	}
	h.fail(class, "a Pebble background job failed: "+msg)
	h.park("Pebble background job", msg)
}

// diskUsageName is the Pebble function whose failure is reported as a
// background error without any job having failed.
const diskUsageName = "github.com/cockroachdb/pebble/v2.(*DB).calculateDiskAvailableBytes"

// park stops the calling Pebble goroutine for good, the store having
// failed: what Pebble would do next would kill the process or retry for
// ever. It logs once per parked goroutine, without a stack.
func (h *health) park(what, cause string) {
	h.parked.Add(1)
	h.logger.Error("local store: a Pebble goroutine is stopped for good after a failure; the store has failed "+
		"and the directory stays locked until the process exits",
		"dir", h.dir, "where", what, "cause", cause, "err", errString(h.failed()))
	select {}
}

// errString is err's message, for a log attribute: slog's text handler
// would print an error with %+v, which for Pebble's errors is a stack trace.
func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (h *health) lastBackgroundError() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lastBgEr
}

// eventListener routes Pebble's corruption reports and background errors
// here. Pebble's default DataCorruption handler calls Fatalf; this one marks
// the store corrupt and lets the read that found it return its error.
func (h *health) eventListener() *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: h.backgroundError,
		DataCorruption: func(info pebble.DataCorruptionInfo) {
			h.fail(coverage.ErrCorrupt, fmt.Sprintf("Pebble found corruption in %s: %v", info.Path, info.Details))
		},
	}
}

// pebbleLogger routes Pebble's logs to the injected logger.
type pebbleLogger struct {
	l *slog.Logger
	h *health // nil for tests that open Pebble directly
}

func (p pebbleLogger) Infof(format string, args ...any) { p.l.Debug(fmt.Sprintf(format, args...)) }

func (p pebbleLogger) Errorf(format string, args ...any) { p.l.Error(fmt.Sprintf(format, args...)) }

// Fatalf must not return into Pebble's broken state. What it does instead
// depends on whose goroutine called it:
//
//   - One of ours, inside guarded (a commit, Open, Close): it panics with
//     fatalPanic, which guarded recovers into the store's failure. The
//     caller gets an error; nothing is left waiting.
//   - One of Pebble's own background goroutines (a flush or compaction
//     installing a new MANIFEST): a panic there would kill the process and
//     runtime.Goexit would run Pebble's deferred unlocks and let its other
//     goroutines go on from a half-applied state. It parks for ever instead,
//     holding Pebble's locks, which freezes that instance: it stops touching
//     the directory. Callers never wait on it, because every Pebble call
//     after the failure is refused and every call in progress waits for its
//     result or the failure, whichever comes first (Store.call).
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if p.h == nil {
		p.l.Error(msg)
		panic("pebble: " + msg)
	}
	class := coverage.ErrUnavailable
	for _, a := range args {
		if err, ok := a.(error); ok && pebble.IsCorruptionError(err) {
			class = coverage.ErrCorrupt
		}
	}
	p.h.fail(class, "Pebble stopped: "+msg)
	if inGuarded() {
		panic(fatalPanic{msg})
	}
	p.h.park("Pebble Fatalf", msg)
}

type fatalPanic struct{ msg string }

// guarded runs fn, turning a panic (Fatalf's, or one of Pebble's own on a
// broken instance) into the store's failure and an error.
//
//go:noinline
func guarded(h *health, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(fatalPanic); !ok {
				h.fail(coverage.ErrUnavailable, fmt.Sprintf("Pebble panicked: %v", r))
			}
			err = h.failed()
		}
	}()
	return fn()
}

var guardedName = runtime.FuncForPC(reflect.ValueOf(guarded).Pointer()).Name()

// inGuarded reports whether the calling goroutine is inside guarded: only
// then will a panic be recovered rather than kill the process.
func inGuarded() bool {
	return onStack(func(fn string) bool { return fn == guardedName || strings.HasPrefix(fn, guardedName+".") })
}

// onStack reports whether a function on the calling goroutine's stack
// matches. Only failure paths ask, so walking the stack costs nothing that
// matters.
func onStack(match func(fn string) bool) bool {
	pcs := make([]uintptr, 512)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if match(f.Function) {
			return true
		}
		if !more {
			return false
		}
	}
}

// call runs fn, a Pebble operation, on its own goroutine inside guarded and
// waits for its result or for the store to fail, whichever comes first, so
// that a caller is never blocked for ever behind a Pebble goroutine parked
// in Fatalf. A failed store runs nothing.
func (s *Store) call(fn func() error) error {
	if err := s.health.failed(); err != nil {
		return err
	}
	done := make(chan error, 1)
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		done <- guarded(s.health, fn)
	}()
	select {
	case err := <-done:
		if err != nil {
			if failed := s.health.failed(); failed != nil {
				return failed
			}
		}
		return err
	case <-s.health.done:
		return s.health.failed()
	}
}
