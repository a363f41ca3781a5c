package compaction

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
)

// MinOrphanAge is iceberg.MinOrphanAge: the youngest a file may be and
// still be deleted as an orphan.
const MinOrphanAge = iceberg.MinOrphanAge

// MaintainOptions configures Maintain. Zero values are documented defaults.
type MaintainOptions struct {
	// Expire says which snapshots to expire. Zero value: durable.ExpireOptions'
	// own defaults (older than 15 minutes, keeping the last 20).
	Expire durable.ExpireOptions
	// OrphanOlderThan: files under the table location that no snapshot
	// references and that are older than this are deleted. Zero value:
	// DefaultOrphanOlderThan; below MinOrphanAge is refused.
	OrphanOlderThan time.Duration
	// DryRun lists orphans without deleting them (expiry is skipped too).
	// Zero value: delete them.
	DryRun bool
}

// DefaultOrphanOlderThan is MaintainOptions.OrphanOlderThan's zero value.
const DefaultOrphanOlderThan = 24 * time.Hour

// EnsureDefaults fills in zero values.
func (o *MaintainOptions) EnsureDefaults() {
	o.Expire.EnsureDefaults()
	if o.OrphanOlderThan == 0 {
		o.OrphanOlderThan = DefaultOrphanOlderThan
	}
}

// Validate reports unusable options.
func (o *MaintainOptions) Validate() error {
	if o.OrphanOlderThan < MinOrphanAge {
		return fmt.Errorf("compaction: MaintainOptions.OrphanOlderThan %s is below the %s safety minimum: a checkpoint in flight could lose its files", o.OrphanOlderThan, MinOrphanAge)
	}
	return o.Expire.Validate()
}

// MaintainResult is what one Maintain run did.
type MaintainResult struct {
	SnapshotsExpired int   `json:"snapshots_expired"`
	OrphanFiles      int   `json:"orphan_files"`
	OrphanBytes      int64 `json:"orphan_bytes"`
	DeletedFiles     int   `json:"deleted_files"`
	DryRun           bool  `json:"dry_run"`
}

// Maintain expires old snapshots and deletes orphan files (left by killed
// checkpoints and by compactions that lost a race), so that commit latency
// and storage stay flat over months of checkpoints. Neither changes what is
// covered: the current snapshot references every live data file.
func Maintain(ctx context.Context, t *iceberg.Table, o MaintainOptions) (MaintainResult, error) {
	res := MaintainResult{DryRun: o.DryRun}
	o.EnsureDefaults()
	if err := o.Validate(); err != nil {
		return res, err
	}
	if !o.DryRun {
		expired, err := t.ExpireSnapshots(ctx, o.Expire)
		if err != nil {
			return res, err
		}
		res.SnapshotsExpired = expired
	}
	orphans, err := t.DeleteOrphanFiles(ctx, o.OrphanOlderThan, o.DryRun)
	if err != nil {
		return res, fmt.Errorf("compaction: %w", err)
	}
	res.OrphanFiles, res.OrphanBytes, res.DeletedFiles = orphans.Files, orphans.Bytes, orphans.Deleted
	return res, nil
}

// NextRun is when a scheduled job that last started at last runs next:
// every later, moved by up to ±jitter×every so that many jobs on one
// schedule spread out; u is a uniform random number in [0,1). It never
// returns a time before last. A pure function, so schedules are testable
// without sleeping.
func NextRun(last time.Time, every time.Duration, jitter, u float64) time.Time {
	jitter = math.Max(0, math.Min(jitter, 1))
	offset := time.Duration((2*u - 1) * jitter * float64(every))
	next := last.Add(every + offset)
	if next.Before(last) {
		return last
	}
	return next
}
