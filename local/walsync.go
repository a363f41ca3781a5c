package local

import (
	"errors"
	"path/filepath"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// walSync is how every commit reaches Pebble's WAL. Pebble's LogWriter
// keeps the WAL's current block in the process until a commit asks for a
// sync or the block fills: a commit with pebble.NoSync is in the process's
// memory only, and a SIGKILL loses it with every commit since the last
// synced one (pebble v2.1.7, record/log_writer.go: flushLoop wakes only for
// a full block or a queued sync). So every commit is made with pebble.Sync,
// which makes the LogWriter write the block to the file before the commit
// returns, and the WAL file's Sync (walFile) is an fsync only when one is
// wanted: always with Options.Sync, and while a commit that must be on disk
// (BeginCheckpoint's, the store's name) is in progress. A commit answered
// is then in the operating system's page cache: it survives a SIGKILL or an
// OOM kill; only power loss or a lost node costs what was not fsynced.
//
// A commit that must be on disk counts itself in forced before it reaches
// Pebble and until it returns. The LogWriter fsyncs for it only in a flush
// whose queue of sync waiters holds it, read after it queued itself; the
// Sync there reads forced after that, so it sees the count and is a real
// fsync. Other commits' no-op Syncs never satisfy it: they end before it
// queued itself, or they are that same real fsync.
type walSync struct {
	always bool         // Options.Sync: every Sync of a WAL is an fsync
	forced atomic.Int64 // commits in progress that must be on disk
}

// fsync reports whether a WAL's Sync must reach the disk now.
func (w *walSync) fsync() bool { return w.always || w.forced.Load() > 0 }

// commit commits b: to the operating system always, to the disk as well
// when fsync is set or Options.Sync is.
func (w *walSync) commit(b *pebble.Batch, fsync bool) error {
	if fsync {
		return w.synced(func() error { return b.Commit(pebble.Sync) })
	}
	return b.Commit(pebble.Sync)
}

// synced runs fn, a Pebble write with pebble.Sync, as one that must be on
// disk when it returns.
func (w *walSync) synced(fn func() error) error {
	w.forced.Add(1)
	defer w.forced.Add(-1)
	return fn()
}

// isWAL reports whether name is one of Pebble's write-ahead logs
// (NNNNNN.log, or NNNNNN-NNN.log for a failover log).
func isWAL(name string) bool { return filepath.Ext(name) == ".log" }

// walFile is a WAL file whose Sync is an fsync only when walSync says so.
// Its Close fsyncs what was written since the last fsync, as Pebble's own
// close of a WAL does: a WAL closed by a rotation is then whole on disk
// before its successor takes writes, so that a power loss never leaves a
// torn log before the last one (which Pebble's Open refuses as corrupt).
type walFile struct {
	watchFile
	wal   *walSync
	dirty atomic.Bool // written since the last fsync
}

func (f *walFile) Write(p []byte) (int, error) {
	f.dirty.Store(true)
	return f.watchFile.Write(p)
}

func (f *walFile) WriteAt(p []byte, off int64) (int, error) {
	f.dirty.Store(true)
	return f.watchFile.WriteAt(p, off)
}

// Sync and SyncData are what the LogWriter calls for a commit with
// pebble.Sync (through vfs.NewSyncingFile's Sync, which calls SyncData).
func (f *walFile) Sync() error {
	if !f.wal.fsync() {
		return nil
	}
	f.dirty.Store(false)
	return f.watchFile.Sync()
}

func (f *walFile) SyncData() error {
	if !f.wal.fsync() {
		return nil
	}
	f.dirty.Store(false)
	return f.watchFile.SyncData()
}

func (f *walFile) Close() error {
	var syncErr error
	if f.dirty.Load() {
		f.dirty.Store(false)
		syncErr = f.watchFile.SyncData()
	}
	return errors.Join(syncErr, f.watchFile.Close())
}

var _ vfs.File = (*walFile)(nil)
