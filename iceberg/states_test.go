package iceberg

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/testseed"
)

var statesAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func stateEvent(id, sink string, start, end uint64, st gapstate.State) gapstate.Event {
	return gapstate.Event{ID: id, Destination: coverage.Destination{Sink: sink, Topic: "orders", Partition: 1},
		Range: coverage.Range{Start: start, End: end}, State: st, Reason: "a 400 for " + id, By: "pod-a",
		At: statesAt.Add(time.Duration(start) * time.Microsecond)}
}

// statesByID reads every event of tbl, failing on an ID read twice.
func statesByID(t *testing.T, tbl *Table, f durable.Filter) map[string]gapstate.Event {
	t.Helper()
	got, err := tbl.States(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]gapstate.Event{}
	for _, e := range got {
		if _, dup := out[e.ID]; dup {
			t.Fatalf("event %q read twice", e.ID)
		}
		out[e.ID] = e
	}
	return out
}

// A deployment made before gap states has the coverage table only: Open
// creates the gap states table beside it and leaves the coverage table
// as it was, with no snapshot more and no column more.
func TestOpenGivesAnOldDeploymentTheStatesTable(t *testing.T) {
	ctx := context.Background()
	cat := embeddedCatalog(t)
	order, err := CoverageSortOrder()
	if err != nil {
		t.Fatal(err)
	}
	// What an older binary's Open made: the coverage table, nothing else.
	old, err := openTable(ctx, cat, Options{}, "", CoverageSchema(), CoverageSpec(), order, KindCoverage)
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Append(ctx, durable.Checkpoint{Name: "c1", Writer: "pod", Ranges: []coverage.DestinationRanges{dr("lake", 0, 10)}}); err != nil {
		t.Fatal(err)
	}
	statesIdent := []string{DefaultNamespace, StatesTableName}
	if _, err := cat.LoadTable(ctx, statesIdent); !errors.Is(err, catalog.ErrNoSuchTable) {
		t.Fatalf("before the new Open, the gap states table: %v", err)
	}
	before, _ := old.Load(ctx)
	tbl, err := Open(ctx, cat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := cat.LoadTable(ctx, statesIdent)
	if err != nil {
		t.Fatalf("Open did not create the gap states table: %v", err)
	}
	spec := st.Spec()
	if err := checkSchema(StatesTableName, st.Schema(), StatesSchema()); err != nil || spec.NumFields() != 0 {
		t.Fatalf("the gap states table: %v, spec %s", err, spec.String())
	}
	after, _ := tbl.Load(ctx)
	if after.CurrentSnapshot().SnapshotID != before.CurrentSnapshot().SnapshotID || len(after.Schema().Fields()) != len(CoverageSchema().Fields()) {
		t.Fatal("opening an old deployment changed its coverage table")
	}
	e := stateEvent("e1", "lake", 10, 20, gapstate.Refused)
	if err := tbl.AppendStates(ctx, []gapstate.Event{e}); err != nil {
		t.Fatal(err)
	}
	if got := statesByID(t, tbl, durable.Filter{}); len(got) != 1 || got["e1"].Range != e.Range {
		t.Fatalf("states after the migration: %+v", got)
	}
	// A state is never coverage: the coverage table still covers 0..10.
	cov, err := tbl.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cov) != 1 || cov[coverage.Destination{Sink: "lake", Topic: "t"}].String() != "{[0,10)}" {
		t.Fatalf("coverage after a refused state: %v", cov)
	}
	// The old binary, reading the coverage table, never sees a state.
	oldCov, err := old.Coverage(ctx, durable.Filter{})
	if err != nil || len(oldCov) != 1 {
		t.Fatalf("an older reader of the table: %v, %v", oldCov, err)
	}
}

// A commit that landed twice (a retry after a lost answer that was not
// found) and events repeated across calls read back once per ID.
func TestStatesLandedTwiceReadOnce(t *testing.T) {
	ctx := context.Background()
	tbl := openEmbedded(t)
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 0))
	want := map[string]gapstate.Event{}
	var all []gapstate.Event
	for i := range 20 {
		start := uint64(rng.IntN(100))
		e := stateEvent(fmt.Sprintf("e%d", i), []string{"lake", "search"}[rng.IntN(2)], start, start+1+uint64(rng.IntN(9)), gapstate.States[rng.IntN(len(gapstate.States))])
		want[e.ID] = e
		all = append(all, e)
	}
	for range 3 {
		// Unvalidated and without the lookup: the same rows, committed again.
		batch := []gapstate.Event{}
		for _, i := range rng.Perm(len(all))[:10] {
			batch = append(batch, all[i])
		}
		if err := tbl.appendStates(ctx, "pod-a", batch); err != nil {
			t.Fatal(err)
		}
	}
	if err := tbl.AppendStates(ctx, append(all, all[:5]...)); err != nil {
		t.Fatal(err)
	}
	got := statesByID(t, tbl, durable.Filter{})
	if len(got) != len(want) {
		t.Fatalf("read %d events, %d were appended", len(got), len(want))
	}
	for id, e := range want {
		g := got[id]
		if g.Destination != e.Destination || g.Range != e.Range || g.State != e.State || g.Reason != e.Reason || g.By != e.By || !g.At.Equal(e.At) || g.At.Location() != time.UTC {
			t.Fatalf("event %q reads back as %+v, appended as %+v", id, g, e)
		}
	}
	lake := statesByID(t, tbl, durable.Filter{Sink: "lake"})
	for id, e := range want {
		if _, ok := lake[id]; ok != (e.Sink == "lake") {
			t.Fatalf("filter by sink lake: event %q of %q selected %v", id, e.Sink, ok)
		}
	}
}

// An AppendStates whose answer is lost finds its commit and lands once.
func TestAppendStatesFindsACommitWhoseAnswerWasLost(t *testing.T) {
	ctx := context.Background()
	tbl, cat := openFaulty(t)
	st, err := tbl.StatesTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cat.answersLost.Store(1)
	events := []gapstate.Event{stateEvent("e1", "lake", 0, 5, gapstate.Unrecoverable), stateEvent("e2", "lake", 5, 9, gapstate.Waived)}
	if err := tbl.AppendStates(ctx, events); err != nil {
		t.Fatal(err)
	}
	if got := statesByID(t, tbl, durable.Filter{}); len(got) != 2 {
		t.Fatalf("after a lost answer: %+v", got)
	}
	loaded, err := st.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(loaded.Metadata().Snapshots()); n != 1 {
		t.Fatalf("the gap states table has %d snapshots after one append whose answer was lost, want 1", n)
	}
}

// A gap states table of another shape is left alone: the coverage table
// opens and works, and recording or reading a state says why it cannot.
func TestIncompatibleStatesTableIsRefusedAndLeftAlone(t *testing.T) {
	ctx := context.Background()
	cat := embeddedCatalog(t)
	_ = cat.CreateNamespace(ctx, []string{DefaultNamespace}, nil)
	other := ice.NewSchema(0, ice.NestedField{ID: 1, Name: ColEventID, Type: ice.PrimitiveTypes.Int64, Required: true})
	ident := []string{DefaultNamespace, StatesTableName}
	if _, err := cat.CreateTable(ctx, ident, other); err != nil {
		t.Fatal(err)
	}
	tbl, err := Open(ctx, cat, Options{})
	if err != nil {
		t.Fatalf("the coverage table did not open beside an incompatible gap states table: %v", err)
	}
	if err := tbl.Append(ctx, durable.Checkpoint{Name: "c1", Writer: "pod", Ranges: []coverage.DestinationRanges{dr("lake", 0, 10)}}); err != nil {
		t.Fatal(err)
	}
	err = tbl.AppendStates(ctx, []gapstate.Event{stateEvent("e1", "lake", 10, 20, gapstate.Refused)})
	if !errors.Is(err, ErrIncompatibleTable) || !strings.Contains(err.Error(), "column event_id is long, want string") {
		t.Fatalf("AppendStates over an incompatible table: %v", err)
	}
	if _, err := tbl.States(ctx, durable.Filter{}); !errors.Is(err, ErrIncompatibleTable) {
		t.Fatalf("States over an incompatible table: %v", err)
	}
	loaded, _ := cat.LoadTable(ctx, ident)
	if len(loaded.Schema().Fields()) != 1 || loaded.CurrentSnapshot() != nil {
		t.Fatalf("the incompatible table was altered: %s", loaded.Schema())
	}
	if _, err := Open(ctx, cat, Options{Name: StatesTableName}); err == nil {
		t.Fatal("a coverage table named as the gap states table was opened")
	}
}

// A row no covmirror writes (a state another engine made up) fails the
// read with ErrCorrupt rather than being taken as a state or dropped.
func TestInvalidStateRowIsCorrupt(t *testing.T) {
	ctx := context.Background()
	tbl := openEmbedded(t)
	for name, e := range map[string]gapstate.Event{
		"unknown state": stateEvent("e1", "lake", 0, 5, "covered"),
		"empty range":   stateEvent("e2", "lake", 5, 5, gapstate.Refused),
		"no reason":     func() gapstate.Event { e := stateEvent("e3", "lake", 0, 5, gapstate.Waived); e.Reason = ""; return e }(),
	} {
		t.Run(name, func(t *testing.T) {
			tbl := openEmbedded(t)
			if err := tbl.appendStates(ctx, "engine", []gapstate.Event{stateEvent("ok", "lake", 0, 1, gapstate.Refused), e}); err != nil {
				t.Fatal(err)
			}
			if _, err := tbl.States(ctx, durable.Filter{}); !errors.Is(err, coverage.ErrCorrupt) {
				t.Fatalf("States over a row of %s: %v", name, err)
			}
		})
	}
	// The validated path refuses such an event before writing.
	if err := tbl.AppendStates(ctx, []gapstate.Event{stateEvent("e1", "lake", 0, 5, "covered")}); !errors.Is(err, gapstate.ErrInvalidEvent) {
		t.Fatalf("AppendStates of an unknown state: %v", err)
	}
}
