package object

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestDirDeleteRemovesEmptiedDirectories: deleting a key takes the
// directories it alone kept with it (check-store's scratch keys leave
// nothing behind), and never a directory that holds another key.
func TestDirDeleteRemovesEmptiedDirectories(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, k := range []string{"scratch/run-1/a", "scratch/run-1/b", "scratch/run-2/c"} {
		if _, err := b.Put(ctx, k, []byte(k), ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"scratch/run-1/a", "scratch/run-1/b"} {
		if err := b.Delete(ctx, k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "scratch", "run-1")); !os.IsNotExist(err) {
		t.Fatalf("run-1's directory is still there after its keys were deleted: %v", err)
	}
	if data, _, err := b.Get(ctx, "scratch/run-2/c"); err != nil || string(data) != "scratch/run-2/c" {
		t.Fatalf("another key's object: %q, %v", data, err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the root went: %v", err)
	}
}
