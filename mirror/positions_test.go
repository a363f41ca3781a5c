package mirror

import (
	"errors"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/object"
)

func positionsMirror(t *testing.T, e *env, store coverage.PositionStore) *Mirror {
	t.Helper()
	l, err := local.Open(local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Local: l, Durable: e.table, Writer: "pod-a", Interval: time.Hour, Positions: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func TestSavePositionBuffersNewestUntilSync(t *testing.T) {
	e := newEnv(t)
	store, err := coverage.NewInMemoryPositions(coverage.Source{Name: "files", Regime: coverage.Stored})
	if err != nil {
		t.Fatal(err)
	}
	m := positionsMirror(t, e, store)
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "files", Partition: 0}
	record(t, m, raw, 0, 20)
	for _, b := range []uint64{5, 12, 7} { // 7 arrives late: the buffer keeps 12
		if err := m.SavePosition(ctx, coverage.Position{Source: "files", Partition: 0, Cursor: []byte{byte(b)}, Batch: b}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := store.Positions(ctx, "files", 0); len(got) != 0 {
		t.Fatalf("positions saved before any checkpoint: %v", got)
	}
	// The catalog down: the coverage commit fails, so no position is saved.
	e.shortCommitTimeout(t)
	m.opts.Durable = e.table
	e.cat.down.Store(true)
	if err := m.Sync(ctx); err == nil {
		t.Fatal("Sync with the catalog down succeeded")
	}
	if got, _ := store.Positions(ctx, "files", 0); len(got) != 0 {
		t.Fatalf("positions saved although the coverage commit failed: %v", got)
	}
	e.cat.down.Store(false)
	sum, err := m.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Checkpoints == 0 || sum.Batches != 20 || sum.Destinations != 1 || sum.Positions != 1 {
		t.Fatalf("summary %+v, want a checkpoint of 20 batches of 1 destination and 1 position", sum)
	}
	got, err := store.Positions(ctx, "files", 0)
	if err != nil || len(got) != 1 || got[0].Batch != 12 {
		t.Fatalf("saved positions %v (%v), want only batch 12", got, err)
	}
	if c := committed(t, e, raw); len(c) != 1 || c[0] != rg(0, 20) {
		t.Fatalf("raw committed %v", c)
	}
	// The buffer is empty now: another Sync saves nothing more.
	if sum, err := m.Checkpoint(ctx); err != nil || sum.Positions != 0 {
		t.Fatalf("second checkpoint %+v, %v", sum, err)
	}
}

func TestSavePositionRefusedIsDroppedNotRetriedForever(t *testing.T) {
	e := newEnv(t)
	store, err := coverage.NewInMemoryPositions(coverage.Source{Name: "kafka", Regime: coverage.BrokerManaged})
	if err != nil {
		t.Fatal(err)
	}
	m := positionsMirror(t, e, store)
	if err := m.SavePosition(ctx, coverage.Position{Source: "kafka", Partition: 1, Cursor: []byte("x"), Batch: 3}); err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx); !errors.Is(err, coverage.ErrBrokerManaged) {
		t.Fatalf("Sync: %v, want ErrBrokerManaged", err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatalf("the refused position failed the next Sync too: %v", err)
	}
}

func TestSavePositionValidates(t *testing.T) {
	e := newEnv(t)
	m := e.owner(t, "", "pod-a")
	t.Cleanup(func() { _ = m.Close() })
	if err := m.SavePosition(ctx, coverage.Position{Source: "s", Cursor: []byte("c")}); !errors.Is(err, ErrNoPositionStore) {
		t.Fatalf("without a store: %v", err)
	}
	store, _ := coverage.NewInMemoryPositions(coverage.Source{Name: "s", Regime: coverage.Stored})
	m2 := positionsMirror(t, e, store)
	for _, p := range []coverage.Position{
		{Source: "s", Partition: 0},                                         // no cursor
		{Source: "s", Partition: -1, Cursor: []byte("c")},                   // negative partition
		{Source: "", Cursor: []byte("c")},                                   // no source
		{Source: "s", Cursor: []byte("c"), Batch: coverage.MaxBatchEnd + 1}, // past the table's long
	} {
		if err := m2.SavePosition(ctx, p); !errors.Is(err, coverage.ErrInvalidPosition) && !errors.Is(err, coverage.ErrInvalidDestination) {
			t.Errorf("SavePosition(%+v) = %v, want an invalid-position error", p, err)
		}
	}
}

// TestCheckpointWritesEachPositionsObjectOnce: a checkpoint saves the
// buffered positions of every partition of a source in one write of the
// object tier's positions object for that source, not one per partition.
func TestCheckpointWritesEachPositionsObjectOnce(t *testing.T) {
	e := newEnv(t)
	blobs, err := object.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = blobs.Close() })
	sources := []coverage.Source{{Name: "files", Regime: coverage.Stored}, {Name: "shares", Regime: coverage.Stored}}
	store, err := object.OpenPositions(ctx, object.Options{Blobs: blobs}, sources...)
	if err != nil {
		t.Fatal(err)
	}
	m := positionsMirror(t, e, store)
	const partitions = 40
	for _, src := range sources {
		for part := range int32(partitions) {
			record(t, m, coverage.Destination{Sink: coverage.RawSink, Topic: src.Name, Partition: part}, 0, 10)
			if err := m.SavePosition(ctx, coverage.Position{Source: src.Name, Partition: part, Cursor: []byte("c9"), Batch: 9}); err != nil {
				t.Fatal(err)
			}
		}
	}
	sum, err := m.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Positions != 2*partitions {
		t.Fatalf("checkpoint saved %d positions, want %d", sum.Positions, 2*partitions)
	}
	if w := store.Stats().Writes; w != int64(len(sources)) {
		t.Fatalf("checkpoint wrote positions objects %d times, want once per source (%d)", w, len(sources))
	}
	for _, src := range sources {
		for part := range int32(partitions) {
			if got, err := store.Positions(ctx, src.Name, part); err != nil || len(got) != 1 || got[0].Batch != 9 {
				t.Fatalf("%s/%d holds %v (%v), want batch 9", src.Name, part, got, err)
			}
		}
	}
}
