package mirror_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/object"
)

// TestCorruptSinkObjectHoldsNoOtherSinkBack: with one bit flipped in lake's
// sink object, every later checkpoint still writes raw's and search's
// ranges, fails naming lake (coverage.ErrCorrupt), and leaves lake's
// ranges pending in the local tier, never marked checkpointed. Before,
// a checkpoint read every sink before writing any, and the corrupt one
// froze raw's committed coverage with it.
func TestCorruptSinkObjectHoldsNoOtherSinkBack(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	blobs, err := object.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer blobs.Close()
	tier, err := object.Open(ctx, object.Options{Blobs: blobs})
	if err != nil {
		t.Fatal(err)
	}
	store, err := local.Open(local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := mirror.New(mirror.Options{Local: store, Durable: tier, Writer: "pod"})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	sinks := []string{"lake", "raw", "search"}
	record := func(round uint64) {
		for _, sink := range sinks {
			if err := m.Record(ctx, coverage.Destination{Sink: sink, Topic: "orders"}, coverage.Range{Start: 10 * round, End: 10*round + 10}); err != nil {
				t.Fatal(err)
			}
		}
	}
	record(0)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	flipBitIn(t, dir, "lake")
	for round := uint64(1); round <= 3; round++ {
		record(round)
		err := m.Sync(ctx)
		var partial *durable.PartialError
		if !errors.Is(err, coverage.ErrCorrupt) || !errors.As(err, &partial) || !strings.Contains(err.Error(), `sink "lake"`) {
			t.Fatalf("round %d: checkpoint: %v; want a partial append naming lake as corrupt", round, err)
		}
		want := coverage.Range{Start: 0, End: 10*round + 10}
		for _, sink := range []string{"raw", "search"} {
			got, err := tier.Coverage(ctx, durable.Filter{Sink: sink})
			if err != nil {
				t.Fatal(err)
			}
			if set := got[coverage.Destination{Sink: sink, Topic: "orders"}]; set == nil || !set.ContainsRange(want) {
				t.Fatalf("round %d: %s's committed coverage is %v; want %v: the corrupt lake held it back", round, sink, set, want)
			}
		}
		diag, err := store.Diagnostics(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, dd := range diag.Destinations {
			wantPending := uint64(0)
			if dd.Destination.Sink == "lake" {
				wantPending = 10 * round // every round's, never marked
			}
			if dd.PendingBatches != wantPending {
				t.Fatalf("round %d: %s has %d batches pending (%v); want %d", round, dd.Destination, dd.PendingBatches, dd.Pending, wantPending)
			}
		}
	}
}

// flipBitIn flips one bit in the middle of the sink object under dir that
// holds sink's name.
func flipBitIn(t *testing.T, dir, sink string) {
	t.Helper()
	var path string
	_ = filepath.WalkDir(filepath.Join(dir, "sinks"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if data, _ := os.ReadFile(p); bytes.Contains(data, []byte(sink)) {
				path = p
			}
		}
		return nil
	})
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no sink object of %s under %s: %v", sink, dir, err)
	}
	data[len(data)/2] ^= 1
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
