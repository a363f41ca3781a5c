package local

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/covmirror/covmirror/coverage"
)

// Options configures Open. The zero value of every field but Dir is a
// documented default; EnsureDefaults fills them in and Validate checks the
// result.
type Options struct {
	// Dir is the directory on the pod's own disk holding the store. It is
	// created if missing. Required.
	Dir string

	// FS is the file system everything under Dir goes through: Pebble's
	// files, the directory's lock, and a corrupt store moved aside. Tests
	// inject faults with Pebble's vfs/errorfs or crash with vfs.MemFS.
	// Zero value: vfs.Default, the operating system's.
	FS vfs.FS

	// Sync makes every Record durable (fsync) before it returns. The
	// default, false, fsyncs only BeginCheckpoint (and the close of each
	// write-ahead log) but hands every commit to the operating system
	// before the commit returns (walsync.go): a record survives a SIGKILL
	// or an OOM kill of the process once its commit ran (see CommitDelay),
	// and a power loss or a lost node costs what was not synced, never
	// anything before the last synced write. Losing them is a lag, which
	// docs/design.md accepts: the durable tier is the record.
	Sync bool

	// CommitDelay is how long, with Sync off, a record may wait in memory
	// before it is written to Pebble together with the records around it.
	// Writes to the same key coalesce, so a run of in-order records costs one
	// Pebble write per delay instead of one each. The write runs behind
	// Record, outside the store's lock: Records go on while Pebble writes.
	// A killed process loses the records of this window and of the commit
	// running when it died, nothing committed before: a lag, which
	// docs/design.md accepts. Readers of this Store see every record at
	// once. Zero value: 2ms. Negative: commit every record before Record
	// returns (it then survives a kill as soon as Record returned nil).
	// Ignored when Sync is set.
	CommitDelay time.Duration

	// MaxUncommitted caps how many keys wait for the next write; reaching it
	// writes at once, in the Record that reached it, which then waits for
	// the write running behind it. It is what a Pebble write that stalls or
	// fails holds back: records wait, and see the write's error, only once
	// this many keys are staged. Zero value: DefaultMaxUncommitted.
	MaxUncommitted int

	// MemTableBytes is the size of Pebble's memtable. Each time one fills,
	// Pebble starts a new write-ahead log and syncs the directory
	// (milliseconds, tens on a slow disk); with Sync off that wait falls on
	// the write running behind Record, with Sync on on the Record. Up to
	// four are held in memory while older ones are flushed. Zero value:
	// DefaultMemTableBytes.
	MemTableBytes int64

	// Reference is the sink whose coverage Diagnostics measures other sinks'
	// gaps against. Zero value: coverage.RawSink ("raw").
	Reference string

	// RecoverCorrupt, when set, makes Open move a corrupt or incompatible
	// store aside (to Dir + ".corrupt-<time>") and start empty, instead of
	// failing. Safe because this tier is never authoritative: the durable
	// checkpoint is the record, and an empty local tier only lags it.
	RecoverCorrupt bool

	// Logger receives the store's few log lines (a recovered corrupt store,
	// a failed write being reconciled). Zero value: discard.
	Logger *slog.Logger

	// Now is the clock, for tests. Zero value: time.Now.
	Now func() time.Time
}

// DefaultMaxUncommitted is Options.MaxUncommitted's zero value: at 100,000
// records a second, a Pebble write may stall for over 100ms before records
// wait for it. About 100 bytes each.
const DefaultMaxUncommitted = 16384

// DefaultMemTableBytes is Options.MemTableBytes' zero value: 32 MiB, so
// that at 100,000 records a second a memtable fills every few seconds
// rather than several times a second.
const DefaultMemTableBytes = 32 << 20

// EnsureDefaults fills in the zero-valued fields with their defaults.
func (o *Options) EnsureDefaults() {
	if o.FS == nil {
		o.FS = vfs.Default
	}
	if o.CommitDelay == 0 {
		o.CommitDelay = 2 * time.Millisecond
	}
	if o.MaxUncommitted == 0 {
		o.MaxUncommitted = DefaultMaxUncommitted
	}
	if o.MemTableBytes == 0 {
		o.MemTableBytes = DefaultMemTableBytes
	}
	if o.Reference == "" {
		o.Reference = coverage.RawSink
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Validate reports options Open cannot work with.
func (o *Options) Validate() error {
	if o.Dir == "" {
		return errors.New("local: Options.Dir is empty: name a directory on the pod's own disk")
	}
	if o.MaxUncommitted < 0 {
		return fmt.Errorf("local: Options.MaxUncommitted is %d: it must be positive", o.MaxUncommitted)
	}
	if o.MemTableBytes < 1<<20 || o.MemTableBytes > 1<<30 {
		return fmt.Errorf("local: Options.MemTableBytes is %d: it must be from 1 MiB to 1 GiB", o.MemTableBytes)
	}
	if err := (coverage.Destination{Sink: o.Reference, Topic: "t"}).Validate(); err != nil {
		return fmt.Errorf("local: Options.Reference: %w", err)
	}
	return nil
}
