package local

import (
	"errors"
	"fmt"

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
