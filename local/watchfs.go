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
type watchFS struct {
	vfs.FS
	h *health
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
	return watchFile{File: f, fs: w, name: name}, nil
}

func (w watchFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.Create(name, c)
	return w.file(name, f, w.check("create", name, err))
}

func (w watchFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := w.FS.OpenReadWrite(name, c, opts...)
	return w.file(name, f, w.check("open for writing", name, err))
}

func (w watchFS) OpenDir(name string) (vfs.File, error) {
	f, err := w.FS.OpenDir(name)
	return w.file(name, f, err)
}

func (w watchFS) ReuseForWrite(oldname, newname string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.ReuseForWrite(oldname, newname, c)
	return w.file(newname, f, w.check("reuse", newname, err))
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
}

func (f watchFile) Write(p []byte) (int, error) {
	n, err := f.File.Write(p)
	return n, f.fs.check("write", f.name, err)
}

func (f watchFile) WriteAt(p []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(p, off)
	return n, f.fs.check("write", f.name, err)
}

func (f watchFile) Sync() error { return f.fs.check("sync", f.name, f.File.Sync()) }

func (f watchFile) SyncData() error { return f.fs.check("sync", f.name, f.File.SyncData()) }

func (f watchFile) SyncTo(length int64) (bool, error) {
	full, err := f.File.SyncTo(length)
	return full, f.fs.check("sync", f.name, err)
}

func (f watchFile) Preallocate(off, length int64) error {
	return f.fs.check("preallocate", f.name, f.File.Preallocate(off, length))
}
