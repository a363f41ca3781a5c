package local

import (
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/covmirror/covmirror/coverage"
)

// watchFS wraps Options.FS and fails the store at the first write under it
// that fails (a full disk, an I/O error). Pebble reacts to such a failure
// late, and some of its reactions cannot be recovered: a WAL it cannot
// close panics with its mutex released, and the deferred unlock kills the
// process; writes without fsync after a failed WAL write are accepted and
// lost. Failing the store at once means no later call reaches Pebble, and
// Record reports the failure instead of accepting what Pebble would lose.
// Every write failure is final for the store (ErrUnavailable): restart the
// process once the disk is fixed.
//
// Where Pebble would turn a failure into a panic that no caller can
// recover, the goroutine that met it parks for good instead (park), after
// failing the store; Close then leaves that instance, and the directory's
// lock, to the process's exit. Pebble panics on a failed file operation in
// two places (pebble v2.1.7):
//
//   - atomicfs.Marker.Move, when the directory's sync fails. It runs on
//     Pebble's own goroutine in a flush or compaction that rotates the
//     MANIFEST (the first after Open, which replays the WAL), where nothing
//     recovers: a failed sync of a directory parks there. On our calls
//     (Open) it is recovered by guarded and Pebble unwinds cleanly.
//   - DB.rotateWAL, when closing the old WAL fails (its last write, its
//     sync or its close) or creating the next one fails: the panic runs
//     with Pebble's mutex released, and the caller's deferred unlock is a
//     fatal error even under recover. A failure inside rotateWAL parks
//     there, and so does the WAL's close there once the store has failed
//     (an earlier write of Pebble's WAL goroutine failed, which the close
//     would return).
//
// Every other failure is returned to Pebble, which reports it (an error, a
// Fatalf that parks or is recovered) without killing the process, so that
// a failed Open can close Pebble and release the directory.
type watchFS struct {
	vfs.FS
	h   *health
	wal *walSync // how the WAL files' Syncs behave (walsync.go)
}

func (w watchFS) check(op, name string, err error) error {
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, os.ErrExist) {
		w.h.fail(coverage.ErrUnavailable, fmt.Sprintf("%s %s: %v", op, name, err))
	}
	return err
}

func (w watchFS) file(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil {
		return nil, err
	}
	wf := watchFile{File: f, fs: w, name: name}
	if w.wal != nil && isWAL(name) {
		return &walFile{watchFile: wf, wal: w.wal}, nil
	}
	return wf, nil
}

// park stops the calling goroutine for good, the store having failed:
// what Pebble would do with the error next would kill the process.
func (w watchFS) park(op, name string) {
	w.h.park(op+" "+name, "a failed write where Pebble would panic")
}

// rotateWALName is the Pebble function whose panic on a failed WAL close
// cannot be recovered (see watchFS).
const rotateWALName = "github.com/cockroachdb/pebble/v2.(*DB).rotateWAL"

func inRotateWAL() bool { return onStack(func(fn string) bool { return fn == rotateWALName }) }

func (w watchFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.Create(name, c)
	return w.created("create", name, f, err)
}

// created is file for a file just created: one that DB.rotateWAL fails to
// create (the next WAL) it panics on with its mutex released, so the
// goroutine parks there instead, the store failed.
func (w watchFS) created(op, name string, f vfs.File, err error) (vfs.File, error) {
	if err = w.check(op, name, err); err != nil && inRotateWAL() {
		if w.h.failed() == nil { // a missing directory: not a disk failure, fatal all the same
			w.h.fail(coverage.ErrUnavailable, fmt.Sprintf("%s %s: %v", op, name, err))
		}
		w.park(op, name)
	}
	return w.file(name, f, err)
}

func (w watchFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := w.FS.OpenReadWrite(name, c, opts...)
	return w.file(name, f, w.check("open for writing", name, err))
}

func (w watchFS) OpenDir(name string) (vfs.File, error) {
	f, err := w.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return watchFile{File: f, fs: w, name: name, dir: true}, nil
}

func (w watchFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.ReuseForWrite(oldname, newname, c)
	return w.created("reuse", newname, f, err)
}

func (w watchFS) Link(oldname, newname string) error {
	return w.check("link", newname, w.FS.Link(oldname, newname))
}

func (w watchFS) Rename(oldname, newname string) error {
	return w.check("rename", newname, w.FS.Rename(oldname, newname))
}

func (w watchFS) Unwrap() vfs.FS { return w.FS }

type watchFile struct {
	vfs.File
	fs   watchFS
	name string
	dir  bool // a directory handle, opened for its Sync
}

// checked fails the store if err is a failure, and parks where Pebble would
// panic on it unrecoverably (see watchFS).
func (f watchFile) checked(op string, err error) error {
	if err = f.fs.check(op, f.name, err); err != nil && f.fs.h.failed() != nil {
		if (f.dir && op == "sync" && !inGuarded()) || inRotateWAL() {
			f.fs.park(op, f.name)
		}
	}
	return err
}

func (f watchFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.checked("write", err)
}

func (f watchFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.checked("write", err)
}

func (f watchFile) Sync() error { return f.checked("sync", f.File.Sync()) }

func (f watchFile) SyncData() error { return f.checked("sync", f.File.SyncData()) }

func (f watchFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.checked("sync", err)
}

func (f watchFile) Preallocate(off, length int64) error {
	return f.checked("preallocate", f.File.Preallocate(off, length))
}

// Close parks inside rotateWAL once the store has failed, whatever its own
// result: LogWriter.Close would return the failure of an earlier write of
// the WAL (on Pebble's goroutine), and rotateWAL panic on it.
func (f watchFile) Close() error {
	err := f.checked("close", f.File.Close())
	if f.fs.h.failed() != nil && !f.dir && inRotateWAL() {
		f.fs.park("close", f.name)
	}
	return err
}
