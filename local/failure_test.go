package local

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/covmirror/covmirror/coverage"
)

func TestOpenLockedDirectoryNamesIt(t *testing.T) {
	s := openTemp(t, Options{})
	defer s.Close()
	_, err := Open(Options{Dir: s.Dir()})
	if !errors.Is(err, ErrLocked) || !errors.Is(err, coverage.ErrUnavailable) || !strings.Contains(err.Error(), s.Dir()) ||
		!strings.Contains(err.Error(), "debug handler") {
		t.Fatalf("second open: %v; want ErrLocked naming %s and the debug handler", err, s.Dir())
	}
}

// garble overwrites every file of the store with garbage of the same size.
func garble(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		info, _ := e.Info()
		size := max(info.Size(), 64)
		junk := []byte(strings.Repeat("not a pebble file\x00\xff", int(size)/19+1))[:size]
		if err := os.WriteFile(path, junk, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func populated(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := openTemp(t, Options{Dir: dir})
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	for b := uint64(0); b < 100; b += 2 {
		record(t, s, d, b, b+1)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestCorruptStoreIsClassifiedAndRecoverable(t *testing.T) {
	dir := populated(t)
	garble(t, dir)
	_, err := Open(Options{Dir: dir})
	if !errors.Is(err, coverage.ErrCorrupt) || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "move the directory aside") {
		t.Fatalf("open of a garbled store: %v; want ErrCorrupt naming %s and the remedy", err, dir)
	}
	s, err := Open(Options{Dir: dir, RecoverCorrupt: true})
	if err != nil {
		t.Fatalf("recovering: %v", err)
	}
	defer s.Close()
	if ds, _ := s.Destinations(ctx); len(ds) != 0 {
		t.Fatalf("recovered store is not empty: %v", ds)
	}
	aside, _ := filepath.Glob(dir + ".corrupt-*")
	if len(aside) != 1 {
		t.Fatalf("the corrupt store was not kept aside: %v", aside)
	}
	if entries, _ := os.ReadDir(aside[0]); len(entries) == 0 {
		t.Fatalf("%s is empty", aside[0])
	}
}

func TestTruncatedStoreIsClassified(t *testing.T) {
	dir := populated(t)
	manifests, _ := filepath.Glob(filepath.Join(dir, "MANIFEST-*"))
	if len(manifests) == 0 {
		t.Fatal("no MANIFEST")
	}
	for _, m := range manifests {
		if err := os.Truncate(m, 10); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Open(Options{Dir: dir}); !errors.Is(err, coverage.ErrCorrupt) {
		t.Fatalf("open of a truncated store: %v; want ErrCorrupt", err)
	}
}

func TestIncompatibleFormat(t *testing.T) {
	dir := populated(t)
	db, err := pebble.Open(dir, quietPebble())
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set(metaKey(metaFormat), []byte("covmirror-local/999"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	_, err = Open(Options{Dir: dir})
	if !errors.Is(err, ErrIncompatibleFormat) || !strings.Contains(err.Error(), "covmirror-local/999") {
		t.Fatalf("open of another format: %v", err)
	}

	foreign := t.TempDir()
	db, _ = pebble.Open(foreign, quietPebble())
	_ = db.Set([]byte("someone else's key"), []byte("v"), pebble.Sync)
	_ = db.Close()
	if _, err := Open(Options{Dir: foreign}); !errors.Is(err, ErrIncompatibleFormat) {
		t.Fatalf("open of a foreign pebble store: %v", err)
	}
	s, err := Open(Options{Dir: foreign, RecoverCorrupt: true})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
}

func TestOptionsValidate(t *testing.T) {
	if _, err := Open(Options{}); err == nil || !strings.Contains(err.Error(), "Options.Dir") {
		t.Fatalf("open without a directory: %v", err)
	}
}

func quietPebble() *pebble.Options {
	return &pebble.Options{Logger: pebbleLogger{l: slog.New(slog.DiscardHandler)}}
}
