package compaction

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNextRun(t *testing.T) {
	start := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	every := 10 * time.Minute
	if got := NextRun(start, every, 0, 0.9); !got.Equal(start.Add(every)) {
		t.Fatalf("no jitter: %s", got)
	}
	if got := NextRun(start, every, 0.1, 0); !got.Equal(start.Add(9 * time.Minute)) {
		t.Fatalf("earliest with 10%% jitter: %s", got)
	}
	if got := NextRun(start, every, 0.1, 0.999999); got.Sub(start) <= 10*time.Minute || got.Sub(start) > 11*time.Minute {
		t.Fatalf("latest with 10%% jitter: %s", got)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 1000 {
		got := NextRun(start, every, 5, r.Float64()) // jitter is capped at 100%
		if got.Before(start) || got.Sub(start) > 2*every {
			t.Fatalf("out of bounds: %s", got)
		}
	}
}

func TestMaintainRefusesAYoungOrphanAge(t *testing.T) {
	tbl := openTable(t)
	if _, err := Maintain(ctx, tbl, MaintainOptions{OrphanOlderThan: time.Minute}); err == nil || !strings.Contains(err.Error(), "safety minimum") {
		t.Fatalf("orphan age of a minute: %v", err)
	}
	// The table's own cleanup refuses it too, for a caller without Maintain.
	if _, err := tbl.DeleteOrphanFiles(ctx, time.Minute, true); err == nil || !strings.Contains(err.Error(), "younger than") {
		t.Fatalf("DeleteOrphanFiles with an age of a minute: %v", err)
	}
}

// TestMaintainDeletesOnlyOldOrphans: an unreferenced file older than the
// orphan age goes (not in a dry run), a young one and every live file stay,
// and coverage is unchanged.
func TestMaintainDeletesOnlyOldOrphans(t *testing.T) {
	tbl, before, _, _ := rewriteSetup(t, 5, 6)
	loaded, _ := tbl.Load(ctx)
	dataDir := strings.TrimPrefix(loaded.Location(), "file://") + "/data"
	old, young := filepath.Join(dataDir, "orphan-old.parquet"), filepath.Join(dataDir, "orphan-young.parquet")
	for _, p := range []string{old, young} {
		if err := os.WriteFile(p, []byte("left by a killed checkpoint"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	twoDaysAgo := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(old, twoDaysAgo, twoDaysAgo); err != nil {
		t.Fatal(err)
	}
	dry, err := Maintain(ctx, tbl, MaintainOptions{DryRun: true})
	if err != nil || dry.OrphanFiles != 1 || dry.DeletedFiles != 0 {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatalf("a dry run deleted %s: %v", old, err)
	}
	res, err := Maintain(ctx, tbl, MaintainOptions{})
	if err != nil || res.OrphanFiles != 1 || res.DeletedFiles != 1 {
		t.Fatalf("maintain: %+v, %v", res, err)
	}
	if _, err := os.Stat(old); !os.IsNotExist(err) {
		t.Fatalf("the old orphan is still there: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Fatalf("the young file was deleted: %v", err)
	}
	sameCoverage(t, "after maintenance", coverageOf(t, tbl), before)
}
