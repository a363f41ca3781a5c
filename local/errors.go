package local

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"

	"github.com/covmirror/covmirror/coverage"
)

var (
	// ErrLocked: another process (or another Store in this one) has the
	// directory open. A running pod holds its store for as long as it runs:
	// inspect it through the pod's debug handler (Handler) instead.
	// It matches coverage.ErrUnavailable too.
	ErrLocked = fmt.Errorf("%w: local store is locked", coverage.ErrUnavailable)

	// ErrIncompatibleFormat: the directory holds a store of another format
	// version, or something that is not a covmirror store. Move it aside and
	// resume from the durable checkpoint (or set Options.RecoverCorrupt).
	ErrIncompatibleFormat = errors.New("local store has an incompatible format")

	// ErrCheckpointInFlight: BeginCheckpoint while a checkpoint begun by this
	// process is neither committed nor aborted. Finish that one first.
	ErrCheckpointInFlight = errors.New("a checkpoint is already in flight")

	// ErrUnknownCheckpoint: CommitCheckpoint or AbortCheckpoint of a
	// checkpoint that is not the one in flight.
	ErrUnknownCheckpoint = errors.New("not the checkpoint in flight")
)

// remedy is appended to errors about a store that cannot be used as it is.
const remedy = "the local tier is never authoritative: move the directory aside (or set Options.RecoverCorrupt) " +
	"and resume from the durable checkpoint; at most one checkpoint interval is replayed"

func corruptError(dir string, err error) error {
	return fmt.Errorf("%w: local store %s: %w; %s", coverage.ErrCorrupt, dir, err, remedy)
}

func incompatibleError(dir string, err error) error {
	return fmt.Errorf("%w: local store %s: %w; %s", ErrIncompatibleFormat, dir, err, remedy)
}

// ErrNotWritable: the process may not create or write files in the
// directory (permission denied, a read-only file system). Fix the
// directory's owner or mode, or point Options.Dir at a writable one. It
// matches coverage.ErrUnavailable too.
var ErrNotWritable = fmt.Errorf("%w: local store directory is not writable", coverage.ErrUnavailable)

// dirError classifies a failure to create, lock or open the directory.
func dirError(dir, doing string, err error) error {
	if isNotWritable(err) {
		return fmt.Errorf("%w: %s: %s: %w; the process must be able to create and write files there: fix the "+
			"directory's owner or mode, or set Options.Dir to a writable directory", ErrNotWritable, dir, doing, err)
	}
	return fmt.Errorf("%w: local store %s: %s: %w; fix the disk or the path and retry", coverage.ErrUnavailable, dir, doing, err)
}

// isNotWritable reports a file operation refused for permission or a
// read-only file system. Only a path error counts: a bare EACCES comes from
// fcntl, which reports a lock another process holds that way.
func isNotWritable(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && (errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS))
}

// isLockHeld reports LockDirectory's failure because someone holds the lock:
// fcntl's EAGAIN or EACCES, or Pebble's own "lock held by current process".
func isLockHeld(err error) bool {
	if isNotWritable(err) {
		return false
	}
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EACCES) || strings.Contains(err.Error(), "lock held")
}

// openError classifies pebble.Open's failure. An I/O error (a full disk, a
// refused write) says nothing about the store's contents, so it is
// ErrUnavailable, and Options.RecoverCorrupt leaves the store alone; what
// Pebble reports as corruption, or cannot read at all, is ErrCorrupt.
func openError(dir string, err error) error {
	var pe *fs.PathError
	var errno syscall.Errno
	switch {
	case pebble.IsCorruptionError(err):
		return corruptError(dir, err)
	case errors.As(err, &pe) || errors.As(err, &errno):
		return dirError(dir, "opening it", err)
	default:
		return corruptError(dir, err)
	}
}
