package compaction

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/testseed"
)

// TestCompactionAndMaintenanceLeaveTheStatesTable: Compact, snapshot
// expiry and the orphan sweep of the coverage table, with every file two
// hours old, leave the gap states table beside it as it was (its
// snapshots, its files, its events), and coverage as it was.
func TestCompactionAndMaintenanceLeaveTheStatesTable(t *testing.T) {
	seed := testseed.Seed(t)
	tbl, before, _, _ := rewriteSetup(t, seed, 12)
	rng := rand.New(rand.NewPCG(seed, 37))
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 3 {
		start := uint64(rng.IntN(100))
		e := gapstate.Event{ID: gapstate.NewID(), Destination: coverage.Destination{Sink: "lake", Topic: "orders", Partition: int32(i)},
			Range: coverage.Range{Start: start, End: start + 5}, State: gapstate.States[rng.IntN(len(gapstate.States))],
			Reason: "a 400", By: "pod-a", At: at.Add(time.Duration(i) * time.Microsecond)}
		if err := tbl.AppendStates(ctx, []gapstate.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := tbl.StatesTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stBefore, err := st.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stDir := strings.TrimPrefix(stBefore.Location(), "file://")
	var stFiles []string
	_ = filepath.WalkDir(stDir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			stFiles = append(stFiles, p)
		}
		return nil
	})
	eventsBefore, err := tbl.States(ctx, durable.Filter{})
	if err != nil || len(eventsBefore) != 3 {
		t.Fatalf("states before: %v, %v", eventsBefore, err)
	}

	res, err := Compact(ctx, tbl, Options{})
	if err != nil || res.Sinks == 0 {
		t.Fatalf("compact: %+v, %v", res, err)
	}
	// Every file of the warehouse, both tables', looks two hours old.
	warehouse := filepath.Dir(filepath.Dir(stDir))
	old := time.Now().Add(-2 * time.Hour)
	if err := filepath.WalkDir(warehouse, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, old, old)
	}); err != nil {
		t.Fatal(err)
	}
	m, err := Maintain(ctx, tbl, MaintainOptions{Expire: durable.ExpireOptions{OlderThan: time.Millisecond, RetainLast: 1}, OrphanOlderThan: MinOrphanAge})
	if err != nil || m.SnapshotsExpired == 0 || m.DeletedFiles == 0 {
		t.Fatalf("maintain: %+v, %v; want snapshots expired and the compacted files deleted", m, err)
	}

	stAfter, err := st.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(snapshotIDs(stAfter.Metadata().Snapshots()), snapshotIDs(stBefore.Metadata().Snapshots())) {
		t.Fatal("maintaining the coverage table changed the gap states table's snapshots")
	}
	for _, f := range stFiles {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("maintaining the coverage table removed a file of the gap states table: %v", err)
		}
	}
	eventsAfter, err := tbl.States(ctx, durable.Filter{})
	if err != nil || len(eventsAfter) != 3 {
		t.Fatalf("states after: %v, %v", eventsAfter, err)
	}
	sameCoverage(t, "after compaction and maintenance", coverageOf(t, tbl), before)
}

func snapshotIDs(snaps []table.Snapshot) []int64 {
	ids := make([]int64, len(snaps))
	for i, s := range snaps {
		ids[i] = s.SnapshotID
	}
	return ids
}
