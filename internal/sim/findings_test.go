package sim

import (
	"context"
	"errors"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
)

// A local.Open that fails on a disk fault must leave the directory
// unlocked: the pod's supervisor opens it again once the disk answers.
// Found by the simulation (seed 2): a pod could never restart. Fixed in
// the local tier.
func TestFindingFailedOpenReleasesTheLock(t *testing.T) {
	for nth := range 40 {
		mem := vfs.NewCrashableMem()
		seen := 0
		fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
			if op.Kind.ReadOrWrite() != errorfs.OpIsWrite || op.Kind == errorfs.OpLock || op.Kind == errorfs.OpMkdirAll {
				return nil
			}
			if seen++; seen == nth+1 {
				return errorfs.ErrInjected
			}
			return nil
		}))
		s, err := local.Open(local.Options{Dir: "/covmirror", FS: fs, CommitDelay: -1})
		if err == nil {
			_ = s.Close()
			continue
		}
		s, err2 := local.Open(local.Options{Dir: "/covmirror", FS: mem, CommitDelay: -1})
		if errors.Is(err2, local.ErrLocked) {
			t.Fatalf("write fault %d of Open: Open failed (%v), and the next Open, without faults, finds the directory locked: %v", nth, err, err2)
		}
		if err2 == nil {
			_ = s.Close()
		}
	}
}

// A checkpoint's name must never be handed out twice with different
// ranges. With Options.Sync off, the local tier's checkpoint counter was
// written without a sync, so a power loss after a checkpoint landed
// restarted it: the next checkpoint reused the landed one's name with other
// ranges; once a commit's outcome is unknown the table refuses it
// (durable.ErrNameReused) and the pod never checkpoints again. Found by the
// simulation (seed 8); fixed in the local tier (BeginCheckpoint is synced,
// names carry a per-open run).
func TestFindingCheckpointNameReusedAfterPowerLoss(t *testing.T) {
	ctx := context.Background()
	table := tabletest.EmbeddedTable(t)
	mem := vfs.NewCrashableMem()
	open := func(fs vfs.FS) *mirror.Mirror {
		l, err := local.Open(local.Options{Dir: "/covmirror", FS: fs, CommitDelay: -1})
		if err != nil {
			t.Fatal(err)
		}
		m, err := mirror.New(mirror.Options{Local: l, Durable: table, Writer: "pod"})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	m := open(mem)
	if err := m.Record(ctx, d, coverage.Range{Start: 0, End: 1}); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	crashed := mem.CrashClone(vfs.CrashCloneCfg{}) // power lost: only synced data survives
	m2 := open(crashed)
	if err := m2.Record(ctx, d, coverage.Range{Start: 5, End: 6}); err != nil {
		t.Fatal(err)
	}
	if err := m2.Sync(ctx); err != nil {
		t.Fatalf("the first checkpoint after a power loss: %v", err)
	}
	tbl, err := table.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, snap := range tbl.Metadata().Snapshots() {
		if snap.Summary != nil && snap.Summary.Properties[iceberg.SummaryCheckpoint] != "" {
			name := snap.Summary.Properties[iceberg.SummaryCheckpoint]
			if names[name]++; names[name] > 1 {
				t.Fatalf("two checkpoints with different ranges are both named %s in the table: the local tier's "+
					"checkpoint counter restarted after the power loss (a later lookup by name is ambiguous, and "+
					"durable.ErrNameReused then refuses that pod's checkpoints for good)", name)
			}
		}
	}
}
