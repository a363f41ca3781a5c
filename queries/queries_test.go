package queries

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	ice "github.com/apache/iceberg-go"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
)

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized tests (0: from the clock)")

var ctx = context.Background()

func openTable(t testing.TB) *iceberg.Table {
	t.Helper()
	props, err := iceberg.EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := iceberg.Open(ctx, cat, iceberg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// model is what the appended rows cover, per destination, computed by the
// coverage package: the reference the queries are checked against.
type model map[coverage.Destination]*coverage.RangeSet

func (m model) add(d coverage.Destination, r coverage.Range) {
	if m[d] == nil {
		m[d] = new(coverage.RangeSet)
	}
	_ = m[d].Add(r)
}

// hostile names must come back intact: they are bound, never pasted.
var (
	sinks  = []string{"raw", "lake", "warehouse", `o'brien"; drop table x; --`}
	topics = []string{"orders", "päyments", `it's'; select 1; --`}
)

// randomTable appends n random checkpoints: overlapping, touching and
// repeated rows (as two owners write), some destinations a sink never
// writes, and returns the model of what they cover.
func randomTable(t testing.TB, tbl *iceberg.Table, r *rand.Rand, n int) model {
	t.Helper()
	m := model{}
	var previous []coverage.DestinationRanges
	for i := range n {
		var rows []coverage.DestinationRanges
		if previous != nil && r.IntN(4) == 0 {
			rows = previous // a second owner checkpointing the same batches
		}
		for range 1 + r.IntN(5) {
			d := coverage.Destination{Sink: sinks[r.IntN(len(sinks))], Topic: topics[r.IntN(len(topics))], Partition: int32(r.IntN(3))}
			dr := coverage.DestinationRanges{Destination: d}
			for range 1 + r.IntN(4) {
				start := r.Uint64N(300)
				dr.Ranges = append(dr.Ranges, coverage.Range{Start: start, End: start + 1 + r.Uint64N(40)})
			}
			rows = append(rows, dr)
		}
		for _, dr := range rows {
			for _, rg := range dr.Ranges {
				m.add(dr.Destination, rg)
			}
		}
		if err := tbl.Append(ctx, iceberg.Commit{Name: fmt.Sprintf("pod/%d", i+1), Writer: "pod", Ranges: rows}); err != nil {
			t.Fatal(err)
		}
		previous = rows
	}
	return m
}

type row struct {
	Sink, Topic string
	Partition   int32
	Start, End  int64
}

func destinationRows(t testing.TB, res *Result) []row {
	t.Helper()
	if !slices.Equal(res.Columns, []string{"sink", "topic", "partition", "start", "end"}) {
		t.Fatalf("columns %v", res.Columns)
	}
	out := make([]row, len(res.Rows))
	for i, v := range res.Rows {
		out[i] = row{v[0].(string), v[1].(string), v[2].(int32), v[3].(int64), v[4].(int64)}
	}
	return out
}

func (m model) matches(d coverage.Destination, p Params) bool {
	return (p.Sink == "" || d.Sink == p.Sink) && (p.Topic == "" || d.Topic == p.Topic) && (p.Partition == nil || d.Partition == *p.Partition)
}

func (m model) coverageRows(p Params) []row {
	var out []row
	for _, d := range slices.SortedFunc(maps.Keys(m), coverage.Destination.Compare) {
		if m.matches(d, p) {
			for rg := range m[d].All() {
				out = append(out, row{d.Sink, d.Topic, d.Partition, int64(rg.Start), int64(rg.End)})
			}
		}
	}
	return out
}

// gapRows: for every reference destination and every other sink with rows
// of that topic, the reference's ranges the sink lacks.
func (m model) gapRows(p Params) []row {
	ref := cmpOr(p.Reference, coverage.RawSink)
	sinksOf := map[string]map[string]bool{}
	for d := range m {
		if d.Sink != ref && m.matches(coverage.Destination{Sink: p.Sink, Topic: d.Topic, Partition: d.Partition}, p) && (p.Sink == "" || d.Sink == p.Sink) {
			if sinksOf[d.Topic] == nil {
				sinksOf[d.Topic] = map[string]bool{}
			}
			sinksOf[d.Topic][d.Sink] = true
		}
	}
	var out []row
	for d, refSet := range m {
		if d.Sink != ref || (p.Topic != "" && d.Topic != p.Topic) || (p.Partition != nil && d.Partition != *p.Partition) {
			continue
		}
		for sink := range sinksOf[d.Topic] {
			covered := m[d.WithSink(sink)]
			if covered == nil {
				covered = new(coverage.RangeSet)
			}
			gaps := coverage.Gaps(refSet, covered)
			for rg := range gaps.All() {
				out = append(out, row{sink, d.Topic, d.Partition, int64(rg.Start), int64(rg.End)})
			}
		}
	}
	slices.SortFunc(out, func(a, b row) int {
		return coverage.Destination{Sink: a.Sink, Topic: a.Topic, Partition: a.Partition}.Compare(coverage.Destination{Sink: b.Sink, Topic: b.Topic, Partition: b.Partition})*2 + cmpInt(a.Start, b.Start)
	})
	return out
}

// rowDiff says which rows only one side has, or where the order differs.
func rowDiff(got, want []row) string {
	var extra, missing []row
	for _, r := range got {
		if !slices.Contains(want, r) {
			extra = append(extra, r)
		}
	}
	for _, r := range want {
		if !slices.Contains(got, r) {
			missing = append(missing, r)
		}
	}
	if len(extra)+len(missing) == 0 {
		return fmt.Sprintf("same rows, different order:\n got %v\nwant %v", got, want)
	}
	return fmt.Sprintf("%d rows, want %d; unexpected %v; missing %v", len(got), len(want), extra, missing)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func randomParams(r *rand.Rand) Params {
	var p Params
	if r.IntN(3) == 0 {
		p.Sink = sinks[r.IntN(len(sinks))]
	}
	if r.IntN(3) == 0 {
		p.Topic = topics[r.IntN(len(topics))]
	}
	if r.IntN(3) == 0 {
		part := int32(r.IntN(3))
		p.Partition = &part
	}
	if r.IntN(4) == 0 {
		p.Reference = "lake"
	}
	return p
}

// TestQueriesAgreeWithTheCoveragePackage: on tables of random checkpoints,
// the coverage and gaps queries give exactly what the coverage package
// computes from the same rows, under random filters and both bindings; the
// summary and lag queries add up to the same gaps.
func TestQueriesAgreeWithTheCoveragePackage(t *testing.T) {
	queriesAgree(t, openTable, []Binding{ReadParquet, Scan})
}

func queriesAgree(t *testing.T, open func(testing.TB) *iceberg.Table, bindings []Binding) {
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (rerun with -seed %d)", seed, seed)
	r := rand.New(rand.NewPCG(seed, 0))
	rounds := 10
	if testing.Short() {
		rounds = 2
	}
	for round := range rounds {
		tbl := open(t)
		m := randomTable(t, tbl, r, 2+r.IntN(12))
		for _, binding := range bindings {
			db, err := Open(ctx, tbl, Options{Binding: binding})
			if err != nil {
				t.Fatal(err)
			}
			for q := range 8 {
				p := Params{}
				if q > 0 {
					p = randomParams(r)
				}
				where := fmt.Sprintf("round %d, %s, params %+v", round, binding, p)
				res, err := db.Run(ctx, "coverage", p)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if got, want := destinationRows(t, res), m.coverageRows(p); !slices.Equal(got, want) {
					t.Fatalf("%s: coverage query: %s", where, rowDiff(got, want))
				}
				res, err = db.Run(ctx, "gaps", p)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				gaps := destinationRows(t, res)
				if want := m.gapRows(p); !slices.Equal(gaps, want) {
					t.Fatalf("%s: gaps query: %s", where, rowDiff(gaps, want))
				}
				checkSummary(t, db, m, p, gaps, where)
			}
			_ = db.Close()
		}
	}
}

// checkSummary: per sink, the summary's gap count and missing batches are
// the gaps query's, and covered batches are the model's.
func checkSummary(t *testing.T, db *DB, m model, p Params, gaps []row, where string) {
	t.Helper()
	res, err := db.Run(ctx, "summary", p)
	if err != nil {
		t.Fatalf("%s: summary: %v", where, err)
	}
	ref := cmpOr(p.Reference, coverage.RawSink)
	covered, gapCount, missing := map[string]int64{}, map[string]int64{}, map[string]int64{}
	for d, set := range m {
		if d.Sink != ref && m.matches(d, p) {
			covered[d.Sink] += int64(set.Batches())
		}
	}
	for _, g := range gaps {
		gapCount[g.Sink]++
		missing[g.Sink] += g.End - g.Start
	}
	if len(res.Rows) != len(covered) {
		t.Fatalf("%s: summary has %d sinks, want %d: %v", where, len(res.Rows), len(covered), res.Rows)
	}
	for _, v := range res.Rows {
		sink := v[0].(string)
		if v[2].(int64) != covered[sink] || v[3].(int64) != gapCount[sink] || v[4].(int64) != missing[sink] {
			t.Fatalf("%s: summary row %v; want covered %d, gaps %d, missing %d", where, v, covered[sink], gapCount[sink], missing[sink])
		}
	}
}

func TestFilesQueryCountsFilesAndSnapshots(t *testing.T) {
	tbl := openTable(t)
	r := rand.New(rand.NewPCG(1, 2))
	randomTable(t, tbl, r, 5)
	db, err := Open(ctx, tbl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	loaded, _ := tbl.Load(ctx)
	tasks, err := iceberg.DataFiles(ctx, loaded)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Run(ctx, "files", Params{})
	if err != nil {
		t.Fatal(err)
	}
	var files int64
	for _, v := range res.Rows {
		files += v[1].(int64)
		if v[2].(int64) != v[1].(int64) {
			t.Fatalf("every file of a few rows is small: %v", v)
		}
		if v[5].(int64) != 5 {
			t.Fatalf("snapshots %v, want 5", v[5])
		}
	}
	if files != int64(len(tasks)) {
		t.Fatalf("files query counts %d data files, the snapshot has %d", files, len(tasks))
	}
}

func TestEmptyTable(t *testing.T) {
	db, err := Open(ctx, openTable(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, name := range Names() {
		res, err := db.Run(ctx, name, Params{})
		if err != nil || len(res.Rows) != 0 {
			t.Fatalf("%s on an empty table: %v, %v", name, res, err)
		}
	}
}

func TestUnknownQueryNamesTheQueries(t *testing.T) {
	_, err := Text("holes")
	if !errors.Is(err, ErrUnknownQuery) || !strings.Contains(err.Error(), "coverage, files, gaps, lag, summary") {
		t.Fatalf("unknown query: %v", err)
	}
}

// TestDeleteFilesAreRefused: a snapshot with row-level deletes (written by
// iceberg-go's merge-on-read delete, as another engine might) cannot be
// read from its data files alone.
func TestDeleteFilesAreRefused(t *testing.T) {
	tbl := openTable(t)
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	if err := tbl.Append(ctx, iceberg.Commit{Name: "pod/1", Writer: "pod", Ranges: []coverage.DestinationRanges{{
		Destination: d, Ranges: []coverage.Range{{Start: 1, End: 5}, {Start: 10, End: 20}}}}}); err != nil {
		t.Fatal(err)
	}
	loaded, _ := tbl.Load(ctx)
	txn := loaded.NewTransaction()
	if err := txn.SetProperties(ice.Properties{"write.delete.mode": "merge-on-read"}); err != nil {
		t.Fatal(err)
	}
	if err := txn.Delete(ctx, ice.EqualTo(ice.Reference(iceberg.ColRangeStart), int64(10)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, tbl, Options{})
	if !errors.Is(err, iceberg.ErrDeleteFiles) {
		t.Fatalf("open over a snapshot with delete files: %v", err)
	}
	t.Logf("what the operator sees: %v", err)
}
