package queries

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/postgres"
)

// TestWaivers: the waivers query lists every waived event once, with who,
// when and why, covered or not, and how many of its batches are still in
// a gap, against a model (a waiver of raw counts every sink's); DuckDB and
// PostgreSQL give the same rows.
func TestWaivers(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 37))
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sinks := []string{"raw", "lake", "search"}
	cov := map[coverage.Destination]*coverage.RangeSet{}
	var ckpt []coverage.DestinationRanges
	for _, sink := range sinks {
		d := coverage.Destination{Sink: sink, Topic: "orders"}
		set := new(coverage.RangeSet)
		for range 1 + rng.IntN(4) {
			s := uint64(rng.IntN(60))
			r := coverage.Range{Start: s, End: s + 1 + uint64(rng.IntN(30))}
			_ = set.Add(r)
			ckpt = append(ckpt, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{r}})
		}
		cov[d] = set
	}
	var events []gapstate.Event
	for i := range 12 {
		s := uint64(rng.IntN(80))
		events = append(events, gapstate.Event{ID: fmt.Sprintf("e%d", i), Destination: coverage.Destination{Sink: sinks[rng.IntN(3)], Topic: "orders"},
			Range: coverage.Range{Start: s, End: s + 1 + uint64(rng.IntN(20))}, State: gapstate.States[i%4],
			Reason: fmt.Sprintf("reason %d", i), By: "ops", At: at.Add(time.Duration(rng.IntN(3)) * time.Second)})
	}
	var want [][]string
	ref := cov[coverage.Destination{Sink: "raw", Topic: "orders"}]
	for _, e := range slices.SortedFunc(slices.Values(events), func(a, b gapstate.Event) int {
		if a.Later(&b) {
			return 1
		}
		return -1
	}) {
		if e.State != gapstate.Waived {
			continue
		}
		missing := uint64(0)
		for _, sink := range sinks[1:] {
			if e.Sink != sink && e.Sink != "raw" {
				continue
			}
			gaps := coverage.Gaps(ref, cov[coverage.Destination{Sink: sink, Topic: "orders"}])
			for r := range gaps.All() {
				if r.Start < e.Range.End && r.End > e.Range.Start {
					missing += min(r.End, e.Range.End) - max(r.Start, e.Range.Start)
				}
			}
		}
		want = append(want, []string{e.ID, e.Sink, e.Topic, "0", fmt.Sprint(e.Range.Start), fmt.Sprint(e.Range.End), e.Reason, e.By, e.At.Format(time.RFC3339), fmt.Sprint(missing)})
	}

	if len(want) == 0 {
		t.Fatalf("no waiver among the events (seed %d): the test would prove nothing", seed)
	}
	tbl := tabletest.EmbeddedTable(t)
	if err := tbl.Append(ctx, durable.Checkpoint{Name: "pod/1", Writer: "pod", Ranges: ckpt}); err != nil {
		t.Fatal(err)
	}
	db, err := Open(ctx, tbl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.BindStates(ctx, append(slices.Clone(events), events...)); err != nil {
		t.Fatal(err)
	}
	res, err := db.Run(ctx, "waivers", Params{})
	if err != nil {
		t.Fatal(err)
	}
	if got := timeText(catalogtest.CellText(res.Rows)); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("DuckDB waivers (seed %d)\n got %q\nwant %q", seed, got, want)
	}

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
	if err := tier.Append(ctx, durable.Checkpoint{Name: "pod/1", Writer: "pod", Ranges: ckpt}); err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if _, err := conn.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "gap_states"}.Sanitize()+` VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
			e.ID, e.Sink, e.Topic, e.Partition, int64(e.Range.Start), int64(e.Range.End), string(e.State), e.Reason, e.By, e.At); err != nil {
			t.Fatal(err)
		}
	}
	pres, err := tier.Query(ctx, "waivers", postgres.QueryParams{Reference: "raw"})
	if err != nil {
		t.Fatal(err)
	}
	if got := timeText(catalogtest.CellText(pres.Rows)); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("PostgreSQL waivers (seed %d)\n got %q\nwant %q", seed, got, want)
	}
}

// timeText prints the decided_at cell (column 8) in one form whatever the
// engine's time zone.
func timeText(rows [][]string) [][]string {
	for _, r := range rows {
		if tm, err := time.Parse(time.RFC3339, r[8]); err == nil {
			r[8] = tm.UTC().Format(time.RFC3339)
		}
	}
	return rows
}
