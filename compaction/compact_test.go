package compaction

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/testseed"
)

var ctx = context.Background()

func openTable(t *testing.T) *iceberg.Table {
	_, tbl := embeddedTable(t)
	return tbl
}

// embeddedTable is a coverage table in a fresh embedded catalog, and the
// catalog properties a child process opens it with.
func embeddedTable(tb testing.TB) (map[string]string, *iceberg.Table) {
	tb.Helper()
	props, err := iceberg.EmbeddedProps(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	cat, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		tb.Fatal(err)
	}
	tbl, err := iceberg.Open(ctx, cat, iceberg.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	return props, tbl
}

func dataFiles(t *testing.T, tbl *iceberg.Table) int {
	t.Helper()
	loaded, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.CurrentSnapshot() == nil {
		return 0
	}
	tasks, err := loaded.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return len(tasks)
}

func coverageOf(t *testing.T, tbl *iceberg.Table) map[coverage.Destination]*coverage.RangeSet {
	t.Helper()
	all, err := tbl.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func sameCoverage(t *testing.T, what string, got, want map[coverage.Destination]*coverage.RangeSet) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d destinations, want %d", what, len(got), len(want))
	}
	for d, w := range want {
		if g := got[d]; g == nil || !g.Equal(w) {
			t.Fatalf("%s: %s covers %v, want %v", what, d, g, w.String())
		}
	}
}

// randomCheckpoints appends n random checkpoints: ranges with holes,
// overlaps and exact duplicates over several sinks and partitions.
func randomCheckpoints(t *testing.T, tbl *iceberg.Table, r *rand.Rand, n int) {
	t.Helper()
	sinks := []string{"raw", "lake", "search"}
	var last []coverage.DestinationRanges
	for i := range n {
		var c durable.Checkpoint
		c.Name, c.Writer = fmt.Sprintf("w/%d", i), "w"
		if last != nil && r.IntN(5) == 0 {
			c.Ranges = last // a duplicated checkpoint
		} else {
			for range 1 + r.IntN(3) {
				d := coverage.Destination{Sink: sinks[r.IntN(len(sinks))], Topic: "orders", Partition: int32(r.IntN(2))}
				start := uint64(r.IntN(400))
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d,
					Ranges: []coverage.Range{{Start: start, End: start + 1 + uint64(r.IntN(6))}}})
			}
		}
		last = c.Ranges
		if err := tbl.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCompactionIsSetEqualAndFewerFiles(t *testing.T) {
	compactionIsSetEqual(t, openTable)
}

func compactionIsSetEqual(t *testing.T, open func(*testing.T) *iceberg.Table) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	for round := range 3 {
		tbl := open(t)
		randomCheckpoints(t, tbl, r, 20+r.IntN(30))
		before, filesBefore := coverageOf(t, tbl), dataFiles(t, tbl)
		res, err := Compact(ctx, tbl, Options{})
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		after, filesAfter := coverageOf(t, tbl), dataFiles(t, tbl)
		sameCoverage(t, fmt.Sprintf("round %d after compaction", round), after, before)
		if filesAfter >= filesBefore || filesAfter > 3 || res.FilesRead != filesBefore || res.FilesWritten != filesAfter {
			t.Fatalf("round %d: files %d -> %d, result %+v", round, filesBefore, filesAfter, res)
		}
		// A second run finds one file per sink and leaves them.
		if res, err := Compact(ctx, tbl, Options{}); err != nil || res.Sinks != 0 {
			t.Fatalf("round %d: second run %+v, %v", round, res, err)
		}
	}
}

// rewriteSetup is a table of n random checkpoints, its coverage, its
// metadata and its data files: the inputs of a hand-driven rewrite.
func rewriteSetup(t *testing.T, seed uint64, n int) (*iceberg.Table, map[coverage.Destination]*coverage.RangeSet, *table.Table, []ice.DataFile) {
	t.Helper()
	tbl := openTable(t)
	randomCheckpoints(t, tbl, rand.New(rand.NewPCG(seed, seed)), n)
	base, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := base.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inputs := make([]ice.DataFile, 0, len(tasks))
	for _, task := range tasks {
		inputs = append(inputs, task.File)
	}
	return tbl, coverageOf(t, tbl), base, inputs
}

// mergedCommit is a rewrite commit holding exactly the given coverage.
func mergedCommit(name string, cov map[coverage.Destination]*coverage.RangeSet) durable.Checkpoint {
	c := durable.Checkpoint{Name: name, Writer: "compaction"}
	for d, set := range cov {
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: set.Ranges()})
	}
	return c
}

func TestAppendDuringRewriteIsKept(t *testing.T) {
	tbl, before, base, inputs := rewriteSetup(t, 1, 10)
	c := mergedCommit("compaction/test", before)
	late := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 9}
	// A checkpoint lands after the compaction read its inputs.
	if err := tbl.Append(ctx, durable.Checkpoint{Name: "late", Writer: "pod", Ranges: []coverage.DestinationRanges{
		{Destination: late, Ranges: []coverage.Range{{Start: 1000, End: 1010}}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Rewrite(ctx, base, inputs, c, nil); err != nil {
		t.Fatal(err)
	}
	after := coverageOf(t, tbl)
	if got := after[late]; got == nil || got.String() != "{[1000,1010)}" {
		t.Fatalf("the checkpoint appended during the rewrite is gone: %v", got)
	}
	delete(after, late)
	sameCoverage(t, "after the rewrite", after, before)
}

func TestRacingCompactionsOneWins(t *testing.T) {
	tbl, before, base, inputs := rewriteSetup(t, 3, 12)
	if _, err := tbl.Rewrite(ctx, base, inputs, mergedCommit("first", before), nil); err != nil {
		t.Fatal(err)
	}
	snapshots := func() int { l, _ := tbl.Load(ctx); return len(l.Metadata().Snapshots()) }
	n := snapshots()
	if _, err := tbl.Rewrite(ctx, base, inputs, mergedCommit("second", before), nil); !errors.Is(err, iceberg.ErrInputsGone) {
		t.Fatalf("the losing rewrite: %v, want ErrInputsGone", err)
	}
	if snapshots() != n {
		t.Fatal("the losing rewrite committed something")
	}
	sameCoverage(t, "after the race", coverageOf(t, tbl), before)
}

func TestVerifyCatchesAClosedGap(t *testing.T) {
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	before, _ := coverage.NewRangeSet(coverage.Range{Start: 1, End: 3}, coverage.Range{Start: 4, End: 6})
	err := verify(map[coverage.Destination]*coverage.RangeSet{d: &before},
		[]coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{{Start: 1, End: 6}}}})
	if !errors.Is(err, ErrNotSetEqual) {
		t.Fatalf("a rewrite closing the hole at 3 passed verification: %v", err)
	}
}

// TestOptionsValidate: negative thresholds are refused, and the defaults
// are what the documentation says.
func TestOptionsValidate(t *testing.T) {
	for _, o := range []Options{{SmallFileSize: -1}, {MinSmallFiles: -1}} {
		o.EnsureDefaults()
		if err := o.Validate(); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
	var o Options
	o.EnsureDefaults()
	if err := o.Validate(); err != nil || o.SmallFileSize != 32<<20 || o.MinSmallFiles != 2 || o.Job != "covmirror-compaction" {
		t.Errorf("defaults %+v: %v", o, err)
	}
	m := MaintainOptions{Expire: durable.ExpireOptions{RetainLast: -1}}
	m.EnsureDefaults()
	if err := m.Validate(); err == nil || m.OrphanOlderThan != 24*time.Hour {
		t.Errorf("MaintainOptions %+v: %v", m, err)
	}
}
