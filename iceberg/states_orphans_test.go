package iceberg

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// age sets every file under dir two hours old, past MinOrphanAge.
func age(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-2 * time.Hour)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(path, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// files lists the files under dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// The coverage table's orphan sweep deletes its own orphans and none of
// the gap states table's files, however old: they are another table's.
func TestOrphanSweepLeavesTheStatesTable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	props, err := EmbeddedProps(dir)
	if err != nil {
		t.Fatal(err)
	}
	tbl := openWith(t, props)
	for i, e := range []gapstate.Event{stateEvent("e1", "lake", 0, 5, gapstate.Refused), stateEvent("e2", "lake", 5, 9, gapstate.Waived)} {
		if err := tbl.Append(ctx, durable.Checkpoint{Name: e.ID, Writer: "pod", Ranges: []coverage.DestinationRanges{dr("raw", uint64(i*10), uint64(i*10+10))}}); err != nil {
			t.Fatal(err)
		}
		if err := tbl.AppendStates(ctx, []gapstate.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	covLoaded, _ := tbl.Load(ctx)
	st, _ := tbl.StatesTable(ctx)
	stLoaded, _ := st.Load(ctx)
	covDir, stDir := localPath(t, covLoaded.Location()), localPath(t, stLoaded.Location())
	if strings.HasPrefix(stDir+"/", covDir+"/") {
		t.Fatalf("the embedded catalog put the gap states table %q within the coverage table %q", stDir, covDir)
	}
	orphan := filepath.Join(covDir, "data", "killed-checkpoint.parquet")
	if err := os.WriteFile(orphan, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	stFiles := files(t, stDir)
	age(t, dir)
	res, err := tbl.DeleteOrphanFiles(ctx, MinOrphanAge, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(orphan); !errors.Is(err, fs.ErrNotExist) || res.Deleted == 0 {
		t.Fatalf("the sweep left the coverage table's orphan: %+v, %v", res, err)
	}
	for _, f := range stFiles {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("the coverage table's sweep removed a file of the gap states table: %v", err)
		}
	}
	if got := statesByID(t, tbl, durable.Filter{}); len(got) != 2 {
		t.Fatalf("states after the sweep: %+v", got)
	}
}

// A gap states table placed by hand within the coverage table's location
// stops the coverage table's sweep, which would delete its files.
func TestOrphanSweepRefusesATableWithinIt(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	props, err := EmbeddedProps(dir)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := Open(ctx, cat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	covLoaded, _ := tbl.Load(ctx)
	// Recreate the gap states table inside the coverage table's location.
	ident := table.Identifier{DefaultNamespace, StatesTableName}
	if err := cat.DropTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	if _, err := cat.CreateTable(ctx, ident, StatesSchema(), catalog.WithLocation(covLoaded.Location()+"/gap_states")); err != nil {
		t.Fatal(err)
	}
	tbl, err = Open(ctx, cat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Append(ctx, durable.Checkpoint{Name: "c1", Writer: "pod", Ranges: []coverage.DestinationRanges{dr("raw", 0, 10)}}); err != nil {
		t.Fatal(err)
	}
	if err := tbl.AppendStates(ctx, []gapstate.Event{stateEvent("e1", "lake", 0, 5, gapstate.Refused)}); err != nil {
		t.Fatal(err)
	}
	age(t, dir)
	_, err = tbl.DeleteOrphanFiles(ctx, MinOrphanAge, false)
	if err == nil || !strings.Contains(err.Error(), `"covmirror.gap_states" lies within`) {
		t.Fatalf("a sweep over a table within: %v", err)
	}
	if got := statesByID(t, tbl, durable.Filter{}); len(got) != 1 {
		t.Fatalf("states after the refused sweep: %+v", got)
	}
}
