package iceberg_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// appendStamped commits rows, in the order given, with their own recorded_at,
// through iceberg-go's append (one data file per call).
func appendStamped(t *testing.T, tbl *iceberg.Table, rows []iceberg.Row) {
	t.Helper()
	foreign := make([]tabletest.ForeignRow, len(rows))
	for i, r := range rows {
		d := r.Destination
		foreign[i] = tabletest.Valid(d.Sink, d.Topic, d.Partition, int64(r.Range.Start), int64(r.Range.End))
		foreign[i].RecordedAt = r.RecordedAt
	}
	if err := tabletest.AppendForeign(t, tbl, foreign...); err != nil {
		t.Fatal(err)
	}
}

// readSinkTimes is ReadFilesCoverage over every file of sink in tbl's
// current snapshot.
func readSinkTimes(t *testing.T, tbl *iceberg.Table, sink string) (map[coverage.Destination]*coverage.RangeSet, iceberg.RecordedAt, error) {
	t.Helper()
	ctx := context.Background()
	loaded, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bySink, err := iceberg.DataFilesBySink(ctx, loaded)
	if err != nil {
		t.Fatal(err)
	}
	return iceberg.ReadFilesCoverage(ctx, loaded, sink, bySink[sink])
}

// ReadFilesCoverage against a brute-force max over rows per merged range,
// on random rows in random order spread over several files, then through
// compaction (twice, with rows added between).
func TestReadFilesCoverageTimesRandom(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 0))
	ctx := context.Background()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	iters := 12
	for it := range iters {
		tbl := tabletest.EmbeddedTable(t)
		dests := []coverage.Destination{
			{Sink: "s", Topic: "a"}, {Sink: "s", Topic: "a", Partition: 1}, {Sink: "s", Topic: "b"},
		}
		var all []iceberg.Row
		check := func(stage string) {
			t.Helper()
			sets, times, err := readSinkTimes(t, tbl, "s")
			if err != nil {
				t.Fatalf("iter %d %s: %v", it, stage, err)
			}
			wantSets, wantTimes := tabletest.LatestByBruteForce(all)
			if len(sets) != len(wantSets) {
				t.Fatalf("iter %d %s: %d destinations, want %d", it, stage, len(sets), len(wantSets))
			}
			for d, want := range wantSets {
				got := sets[d]
				if got == nil || !got.Equal(want) {
					t.Fatalf("iter %d %s: %s covers %v, want %v", it, stage, d, got, want)
				}
				if len(times[d]) != want.Len() {
					t.Fatalf("iter %d %s: %s: %d times for %d ranges", it, stage, d, len(times[d]), want.Len())
				}
				i := 0
				for m := range got.All() {
					if w := wantTimes[d][m]; !times[d][i].Equal(w) {
						t.Errorf("iter %d %s: %s %s at %s, want %s (rows %v)", it, stage, d, m, times[d][i], w, all)
					}
					i++
				}
			}
		}
		addRandom := func() {
			files := 1 + rng.IntN(4)
			for range files {
				var rows []iceberg.Row
				for range 1 + rng.IntN(12) {
					s := uint64(rng.IntN(80))
					rows = append(rows, iceberg.Row{
						Destination: dests[rng.IntN(len(dests))],
						Range:       coverage.Range{Start: s, End: s + 1 + uint64(rng.IntN(8))},
						RecordedAt:  base.Add(time.Duration(rng.IntN(20)) * time.Second),
					})
				}
				appendStamped(t, tbl, rows)
				all = append(all, rows...)
			}
		}
		addRandom()
		check("read")
		if _, err := compaction.Compact(ctx, tbl, compaction.Options{MinSmallFiles: 1}); err != nil {
			t.Fatalf("iter %d compact: %v", it, err)
		}
		check("after compaction")
		addRandom()
		check("read 2")
		if _, err := compaction.Compact(ctx, tbl, compaction.Options{MinSmallFiles: 1}); err != nil {
			t.Fatalf("iter %d compact 2: %v", it, err)
		}
		check("after compaction 2")
		if t.Failed() {
			return
		}
		_ = fmt.Sprint
	}
}

// Many rows in one destination, so that the set spans many chunks
// (chunkMax 128): merges across chunk boundaries, ranges moved downward.
func TestReadFilesCoverageTimesManyChunks(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tbl := tabletest.EmbeddedTable(t)
	d := coverage.Destination{Sink: "s", Topic: "a"}
	var all []iceberg.Row
	for f := range 4 {
		var rows []iceberg.Row
		for range 1500 {
			s := uint64(rng.IntN(60000))
			l := 1 + uint64(rng.IntN(6))
			if f == 3 && rng.IntN(10) == 0 {
				l = 1 + uint64(rng.IntN(2000)) // wide: absorbs across chunks
			}
			rows = append(rows, iceberg.Row{Destination: d, Range: coverage.Range{Start: s, End: s + l}, RecordedAt: base.Add(time.Duration(rng.IntN(100000)) * time.Millisecond)})
		}
		appendStamped(t, tbl, rows)
		all = append(all, rows...)
	}
	sets, times, err := readSinkTimes(t, tbl, "s")
	if err != nil {
		t.Fatal(err)
	}
	wantSets, wantTimes := tabletest.LatestByBruteForce(all)
	if !sets[d].Equal(wantSets[d]) {
		t.Fatalf("sets differ")
	}
	t.Logf("%d rows, %d merged ranges", len(all), sets[d].Len())
	i, bad := 0, 0
	for m := range sets[d].All() {
		if w := wantTimes[d][m]; !times[d][i].Equal(w) {
			bad++
			if bad < 5 {
				t.Errorf("%s at %s, want %s", m, times[d][i], w)
			}
		}
		i++
	}
}
