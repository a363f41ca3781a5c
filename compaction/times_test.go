package compaction

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// stampedRows reads every row of tbl with its recorded_at.
func stampedRows(t *testing.T, tbl *iceberg.Table) []iceberg.Row {
	t.Helper()
	loaded, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rows []iceberg.Row
	if err := iceberg.ReadRows(ctx, loaded, durable.Filter{}, true, func(r iceberg.Row) error {
		rows = append(rows, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

// A compacted row keeps the latest recorded_at of the rows it merged, not
// the compaction's time: lag measured from recorded_at must not reset to
// zero at every compaction.
func TestCompactionKeepsRecordedAt(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 1))
	for round := range 3 {
		tbl := openTable(t)
		randomCheckpoints(t, tbl, r, 20+r.IntN(20))
		_, want := tabletest.LatestByBruteForce(stampedRows(t, tbl))
		startedAt := time.Now()
		if _, err := Compact(ctx, tbl, Options{}); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		after := stampedRows(t, tbl)
		got := 0
		for _, row := range after {
			at, ok := want[row.Destination][row.Range]
			switch {
			case !ok:
				t.Fatalf("round %d: compaction wrote %s %s, not a merged range of its inputs", round, row.Destination, row.Range)
			case !row.RecordedAt.Equal(at):
				t.Fatalf("round %d: %s %s recorded at %s, want %s, the latest of its rows (compaction started %s)",
					round, row.Destination, row.Range, row.RecordedAt, at, startedAt)
			case !at.Before(startedAt):
				t.Fatalf("round %d: an input row was recorded at %s, after the compaction started at %s", round, at, startedAt)
			}
			got++
		}
		total := 0
		for _, m := range want {
			total += len(m)
		}
		if got != total {
			t.Fatalf("round %d: %d rows after compaction, want %d merged ranges", round, got, total)
		}
	}
}

// A rewrite refuses recorded times that do not match its ranges one for
// one, writing nothing.
func TestRewriteRefusesMisfitTimes(t *testing.T) {
	tbl, before, base, inputs := rewriteSetup(t, 7, 10)
	c := mergedCommit("misfit", before)
	times := iceberg.RecordedAt{c.Ranges[0].Destination: make([]time.Time, len(c.Ranges[0].Ranges)+1)}
	if _, err := tbl.Rewrite(ctx, base, inputs, c, times); err == nil {
		t.Fatal("a rewrite with one time too many succeeded")
	} else {
		t.Log(err)
	}
	sameCoverage(t, "after a refused rewrite", coverageOf(t, tbl), before)
	if n := dataFiles(t, tbl); n != len(inputs) {
		t.Fatalf("%d data files after a refused rewrite, want %d", n, len(inputs))
	}
}
