package replica_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/postgres"
	"github.com/covmirror/covmirror/replica"
)

var stateBase = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// randomStates are n valid events of lake and search, orders 0 and 1.
func randomStates(rng *rand.Rand, n int) []gapstate.Event {
	var out []gapstate.Event
	for range n {
		start := uint64(rng.IntN(200))
		out = append(out, gapstate.Event{
			ID:          gapstate.NewID(),
			Destination: coverage.Destination{Sink: []string{"lake", "search", "raw"}[rng.IntN(3)], Topic: "orders", Partition: int32(rng.IntN(2))},
			Range:       coverage.Range{Start: start, End: start + 1 + uint64(rng.IntN(20))},
			State:       gapstate.States[rng.IntN(len(gapstate.States))],
			Reason:      fmt.Sprintf("reason %d", rng.IntN(100)),
			By:          "pod-a",
			At:          stateBase.Add(time.Duration(rng.IntN(1e6)) * time.Microsecond),
		})
	}
	return out
}

// sameStates fails unless the table's gap states are exactly want's
// events (one per ID, every field).
func sameStates(t *testing.T, what string, table *iceberg.Table, want map[string]gapstate.Event) {
	t.Helper()
	got, err := table.States(context.Background(), durable.Filter{})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	seen := map[string]bool{}
	for _, e := range got {
		w, ok := want[e.ID]
		if !ok || seen[e.ID] {
			t.Fatalf("%s: the replica holds event %q (%+v), which is not the primary's once", what, e.ID, e)
		}
		seen[e.ID] = true
		if e.Destination != w.Destination || e.Range != w.Range || e.State != w.State || e.Reason != w.Reason || e.By != w.By || !e.At.Equal(w.At) {
			t.Fatalf("%s: event %q reached the replica as %+v, recorded as %+v", what, e.ID, e, w)
		}
	}
	if len(seen) != len(want) {
		t.Fatalf("%s: the replica holds %d of the primary's %d events", what, len(seen), len(want))
	}
}

// replicateStates runs Replicate from primary into a fresh table while
// the primary takes states and coverage, and checks that every state
// reaches the replica once, as a state and never as coverage.
func replicateStates(t *testing.T, primary durable.Tier) {
	ctx := context.Background()
	src, err := durable.StatesOf(primary)
	if errors.Is(err, durable.ErrNoStates) {
		t.Skipf("%s keeps no gap states yet: %v", primary.Name(), err)
	}
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 0))
	table := tabletest.EmbeddedTable(t)
	opts := replica.Options{Writer: "mirror-job"}
	want := map[string]gapstate.Event{}
	// Only lake has coverage; search and raw have states alone.
	lake := coverage.Destination{Sink: "lake", Topic: "orders"}
	for round := range 4 {
		events := randomStates(rng, 1+rng.IntN(5))
		if err := src.AppendStates(ctx, events); err != nil {
			t.Fatal(err)
		}
		for _, e := range events {
			want[e.ID] = e
		}
		c := durable.Checkpoint{Name: fmt.Sprintf("ck-%d", round), Writer: "pod-a", Ranges: []coverage.DestinationRanges{
			{Destination: lake, Ranges: []coverage.Range{{Start: uint64(round * 10), End: uint64(round*10 + 5)}}}}}
		if err := primary.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
		res, err := replica.Replicate(ctx, primary, table, opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.States != len(events) {
			t.Fatalf("round %d: Replicate copied %d gap states, %d were new", round, res.States, len(events))
		}
		what := fmt.Sprintf("after round %d", round)
		sameStates(t, what, table, want)
		// A state read as coverage would be a batch the primary lacks.
		checkSubset(t, what, table, primary)
	}
	// Nothing new: nothing appended.
	loaded, err := table.StatesTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := loaded.Load(ctx)
	res, err := replica.Replicate(ctx, primary, table, opts)
	if err != nil || res.States != 0 {
		t.Fatalf("a run with no new state: %+v, %v", res, err)
	}
	after, _ := loaded.Load(ctx)
	if after.CurrentSnapshot().SnapshotID != before.CurrentSnapshot().SnapshotID {
		t.Fatal("a run with no new state committed to the gap states table")
	}
	// The replica's coverage is the primary's lake coverage only: the
	// states of search and raw made no coverage of them.
	cov, err := table.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	for d, set := range cov {
		if d != lake && !set.IsEmpty() {
			t.Fatalf("the replica covers %s %s, which only gap states name", d, set.String())
		}
	}
}

// TestReplicateStatesFromTheTable: a coverage table as the primary (the
// tier every build has a StateStore on).
func TestReplicateStatesFromTheTable(t *testing.T) {
	replicateStates(t, tabletest.EmbeddedTable(t))
}

// TestReplicateStatesFromObjects: the object tier on a directory.
func TestReplicateStatesFromObjects(t *testing.T) {
	b, err := object.OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tier, err := object.Open(context.Background(), object.Options{Blobs: b})
	if err != nil {
		t.Fatal(err)
	}
	replicateStates(t, tier)
}

// TestReplicateStatesFromPostgres: the PostgreSQL tier in a fresh schema.
func TestReplicateStatesFromPostgres(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	defer conn.Close(ctx)
	schema := catalogtest.Namespace()
	t.Cleanup(func() { _, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE") })
	tier, err := postgres.Open(ctx, postgres.Options{URL: catalogtest.PostgresURL(), Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	defer tier.Close()
	replicateStates(t, tier)
}

// The replica merges by union: an event it holds that the primary has
// not (copied from an earlier primary, say) stays, and one it holds
// already is not appended again.
func TestReplicateStatesIsAUnion(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 1))
	primary, table := tabletest.EmbeddedTable(t), tabletest.EmbeddedTable(t)
	events := randomStates(rng, 6)
	if err := primary.AppendStates(ctx, events); err != nil {
		t.Fatal(err)
	}
	// The replica holds two of them already, and one of its own.
	own := randomStates(rng, 1)
	if err := table.AppendStates(ctx, append(own, events[:2]...)); err != nil {
		t.Fatal(err)
	}
	res, err := replica.Replicate(ctx, primary, table, replica.Options{Writer: "mirror-job"})
	if err != nil || res.States != 4 {
		t.Fatalf("Replicate: %+v, %v; want the 4 events the replica lacked", res, err)
	}
	want := map[string]gapstate.Event{own[0].ID: own[0]}
	for _, e := range events {
		want[e.ID] = e
	}
	sameStates(t, "after a union", table, want)
}
