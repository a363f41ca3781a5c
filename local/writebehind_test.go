package local

import (
	"encoding/binary"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/covmirror/covmirror/coverage"
)

// walStallFS holds the creation of a write-ahead log, which Pebble does in
// the commit that fills a memtable, once armed: until released, and then
// fails it with failWith if set.
type walStallFS struct {
	vfs.FS
	armed    atomic.Bool
	once     sync.Once
	stalled  chan struct{} // closed when a creation is held
	release  chan struct{}
	failWith error
}

func newWALStallFS(fs vfs.FS) *walStallFS {
	return &walStallFS{FS: fs, stalled: make(chan struct{}), release: make(chan struct{})}
}

func (f *walStallFS) hold(name string) error {
	if !f.armed.Load() || !strings.HasSuffix(name, ".log") {
		return nil
	}
	f.once.Do(func() { close(f.stalled) })
	<-f.release
	return f.failWith
}

func (f *walStallFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := f.hold(name); err != nil {
		return nil, err
	}
	return f.FS.Create(name, c)
}

func (f *walStallFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := f.hold(newname); err != nil {
		return nil, err
	}
	return f.FS.ReuseForWrite(oldname, newname, c)
}

// stallDest's long names make each key long, so that a few hundred
// records fill Pebble's first memtable and reach a rotation.
var stallDest = coverage.Destination{Sink: strings.Repeat("s", coverage.MaxNameLen), Topic: strings.Repeat("t", coverage.MaxNameLen)}

// recordUntilStalled records ranges apart from each other (one key each)
// from *next on, one write behind them at a time, until one is held in a
// WAL creation.
func recordUntilStalled(t *testing.T, s *Store, fs *walStallFS, next *uint64, recorded *coverage.RangeSet) {
	t.Helper()
	fs.armed.Store(true)
	for range 1_000_000 {
		r := coverage.Range{Start: *next, End: *next + 1}
		*next += 2
		if err := s.Record(ctx, stallDest, r); err != nil {
			t.Fatalf("record %v before the stall: %v", r, err)
		}
		_, _ = recorded.MergeRange(r, nil)
		// One write at a time, so that few keys are staged when one stalls.
		for {
			select {
			case <-fs.stalled:
				return
			default:
			}
			s.mu.RLock()
			idle := s.w.inFlight == nil
			s.mu.RUnlock()
			if idle {
				break
			}
			runtime.Gosched()
		}
	}
	t.Fatal("no write reached a memtable rotation after 1,000,000 records")
}

// recordInBackground records n more ranges on a goroutine; the channel
// gives its error when all are recorded.
func recordInBackground(s *Store, next *uint64, n int, recorded *coverage.RangeSet) <-chan error {
	ranges := make([]coverage.Range, n)
	for i := range ranges {
		ranges[i] = coverage.Range{Start: *next, End: *next + 1}
		*next += 2
		_, _ = recorded.MergeRange(ranges[i], nil)
	}
	done := make(chan error, 1)
	go func() {
		for _, r := range ranges {
			if err := s.Record(ctx, stallDest, r); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	return done
}

// TestRecordsGoOnWhileAWriteStalls: while the write behind Record is held
// in Pebble (a memtable rotation creating a WAL), Records below
// MaxUncommitted return without waiting for it; the Record that reaches
// the bound waits; once the write goes on, everything recorded is in
// Pebble after a reopen.
func TestRecordsGoOnWhileAWriteStalls(t *testing.T) {
	mem := vfs.NewMem()
	fs := newWALStallFS(mem)
	const bound = 256
	s := openTemp(t, Options{Dir: "/store", FS: fs, CommitDelay: time.Nanosecond, MaxUncommitted: bound})
	var next uint64
	var recorded coverage.RangeSet
	recordUntilStalled(t, s, fs, &next, &recorded)

	// Below the bound: these return while the write is held. Were Record
	// waiting for it, they would never return before the release below.
	select {
	case err := <-recordInBackground(s, &next, bound/2, &recorded):
		if err != nil {
			t.Fatalf("record while a write stalls: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Records waited for the stalled write behind them")
	}
	diag, err := s.Diagnostics(ctx)
	if err != nil || diag.UnpersistedKeys < bound/2 {
		t.Fatalf("diagnostics while a write stalls: %+v, %v; want at least %d unpersisted keys", diag, err, bound/2)
	}

	// Past the bound: the Record that reaches it writes, after the held one.
	blocked := recordInBackground(s, &next, bound, &recorded)
	select {
	case err := <-blocked:
		t.Fatalf("records past MaxUncommitted returned (%v) while the write before them was held", err)
	case <-time.After(100 * time.Millisecond):
	}
	fs.armed.Store(false)
	close(fs.release)
	if err := <-blocked; err != nil {
		t.Fatalf("records past the bound after the release: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openTemp(t, Options{Dir: "/store", FS: mem})
	defer s.Close()
	got, err := s.Covered(ctx, stallDest)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(&recorded) {
		missing := coverage.Gaps(&recorded, &got)
		t.Fatalf("after reopening: %d ranges covered, %d recorded; missing %v", got.Len(), recorded.Len(), missing.Ranges()[:min(5, missing.Len())])
	}
}

// TestStalledWriteThatFailsKeepsEverythingStaged: the write behind Record
// fails after records were staged behind it; both its keys and the newer
// ones stay staged and covered (none is dropped, none overwritten by an
// older value), the store fails, and Diagnostics counts them.
func TestStalledWriteThatFailsKeepsEverythingStaged(t *testing.T) {
	fs := newWALStallFS(vfs.NewMem())
	s := openTemp(t, Options{Dir: "/store", FS: fs, CommitDelay: time.Nanosecond})
	defer s.Close()
	var next uint64
	var recorded coverage.RangeSet
	recordUntilStalled(t, s, fs, &next, &recorded)
	s.mu.RLock()
	inFlight := len(s.w.inFlight)
	s.mu.RUnlock()
	if err := <-recordInBackground(s, &next, 50, &recorded); err != nil {
		t.Fatal(err)
	}
	// Extend a range whose key is in flight: the newer value must win.
	s.mu.RLock()
	var inFlightKey string
	var start uint64
	for k, v := range s.w.inFlight {
		if st := binary.BigEndian.Uint64([]byte(k[len(k)-8:])); v != nil && st+2 < next {
			inFlightKey, start = k, st
			break
		}
	}
	s.mu.RUnlock()
	if inFlightKey == "" {
		t.Fatal("no range key in flight")
	}
	bridge := coverage.Range{Start: start + 1, End: start + 2}
	if err := s.Record(ctx, stallDest, bridge); err != nil {
		t.Fatal(err)
	}
	_, _ = recorded.MergeRange(bridge, nil)
	fs.failWith = syscall.ENOSPC
	close(fs.release)

	deadline := time.Now().Add(time.Minute)
	for {
		s.mu.RLock()
		settled := s.w.inFlight == nil
		s.mu.RUnlock()
		if settled {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the failed write never settled")
		}
		time.Sleep(time.Millisecond)
	}
	diag, err := s.Diagnostics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diag.UnpersistedKeys < inFlight+50 || diag.LastWriteError == "" {
		t.Fatalf("after the failed write: %+v; want at least %d unpersisted keys and the error", diag, inFlight+50)
	}
	s.mu.RLock()
	value, kept := s.w.ops[inFlightKey]
	s.mu.RUnlock()
	if !kept || len(value) != 8 || binary.BigEndian.Uint64(value) != start+3 {
		t.Fatalf("key of range %d after the failed write: staged %v, value %x; want the newer end %d", start, kept, value, start+3)
	}
	got, err := s.Covered(ctx, stallDest)
	if err != nil && !errors.Is(err, coverage.ErrUnavailable) {
		t.Fatal(err)
	}
	if err == nil && !got.Equal(&recorded) {
		t.Fatalf("covered in memory: %d ranges, recorded %d", got.Len(), recorded.Len())
	}
}
