package queries

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	ice "github.com/apache/iceberg-go"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/recovery"
)

var ctx = context.Background()

func openTable(t testing.TB) *iceberg.Table {
	t.Helper()
	return tabletest.EmbeddedTable(t)
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
		if err := tbl.Append(ctx, durable.Checkpoint{Name: fmt.Sprintf("pod/%d", i+1), Writer: "pod", Ranges: rows}); err != nil {
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
	if !slices.Equal(res.Columns[:5], []string{"sink", "topic", "partition", "start", "end"}) {
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

// sinksOf: per topic, the sinks other than the reference with rows of it
// in any partition (the partition filter does not apply: a sink that never
// wrote the selected partition lacks all of it).
func (m model) sinksOf(p Params) map[string]map[string]bool {
	ref := cmpOr(p.Reference, coverage.RawSink)
	sinksOf := map[string]map[string]bool{}
	for d := range m {
		if d.Sink != ref && (p.Topic == "" || d.Topic == p.Topic) && (p.Sink == "" || d.Sink == p.Sink) {
			if sinksOf[d.Topic] == nil {
				sinksOf[d.Topic] = map[string]bool{}
			}
			sinksOf[d.Topic][d.Sink] = true
		}
	}
	return sinksOf
}

// hulls is, per topic and partition, the lowest to the highest batch any
// destination covers.
func (m model) hulls() map[coverage.Destination]coverage.Range {
	out := map[coverage.Destination]coverage.Range{}
	for d, set := range m {
		first, ok := set.First()
		if !ok {
			continue
		}
		last, _ := set.Last()
		tp := coverage.Destination{Topic: d.Topic, Partition: d.Partition}
		h, seen := out[tp]
		if !seen {
			h = coverage.Range{Start: first.Start, End: last.End}
		}
		out[tp] = coverage.Range{Start: min(h.Start, first.Start), End: max(h.End, last.End)}
	}
	return out
}

// gapRows: for every reference destination and every other sink with rows
// of that topic, the reference's ranges the sink lacks; and the reference's
// own holes, under its name, over its span (referenceSpans: the hull of
// every destination's rows of the partition and its acked extent), a
// partition it has no rows of included, unless it has no rows at all in a
// table that has some (a misspelt reference).
func (m model) gapRows(p Params) []row {
	ref := cmpOr(p.Reference, coverage.RawSink)
	sinksOf := m.sinksOf(p)
	var out []row
	for tp, holes := range m.referenceHoles(p) {
		for rg := range holes.All() {
			out = append(out, row{ref, tp.Topic, tp.Partition, int64(rg.Start), int64(rg.End)})
		}
	}
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
	if r.IntN(2) == 0 {
		p.Extents = randomExtents(r)
	}
	return p
}

// randomTopicSinks lists some topics (one no row has among them) with
// their own named sinks drawn from named, some with none.
func randomTopicSinks(r *rand.Rand, named []string) map[string][]string {
	per := map[string][]string{}
	for _, topic := range append(slices.Clone(topics), "absent") {
		if r.IntN(2) == 0 {
			continue
		}
		list := []string{}
		for _, s := range named {
			if r.IntN(3) == 0 {
				list = append(list, s)
			}
		}
		per[topic] = list
	}
	return per
}

// TestQueriesAgreeWithTheCoveragePackage: on tables of random checkpoints,
// the coverage and gaps queries give exactly what the coverage package
// computes from the same rows, under random filters and both bindings; the
// summary and lag queries add up to the same gaps.
func TestQueriesAgreeWithTheCoveragePackage(t *testing.T) {
	queriesAgree(t, openTable, []Binding{ReadParquet, Scan})
}

func queriesAgree(t *testing.T, open func(testing.TB) *iceberg.Table, bindings []Binding) {
	seed := testseed.Seed(t)
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
				if !m.hasSink(cmpOr(p.Reference, coverage.RawSink)) && len(m) > 0 {
					if !errors.Is(err, recovery.ErrNoReference) {
						t.Fatalf("%s: gaps against a reference without rows: %v, want ErrNoReference", where, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				gaps := destinationRows(t, res)
				if want := m.gapRows(p); !slices.Equal(gaps, want) {
					t.Fatalf("%s: gaps query: %s", where, rowDiff(gaps, want))
				}
				// Run fetches the gaps grouped by destination: the rows, their
				// order and their types are the query text's own.
				text, _ := Text("gaps")
				if !strings.HasSuffix(strings.TrimSpace(text), gapsOrder) {
					t.Fatalf("the gaps query no longer ends with %s, which Run drops", gapsOrder)
				}
				plain, err := db.RunSQL(ctx, text, p)
				if err != nil {
					t.Fatalf("%s: %v", where, err)
				}
				if !reflect.DeepEqual(res, plain) {
					t.Fatalf("%s: the gaps fetched grouped\n%v\ndiffer from the query's rows\n%v", where, res, plain)
				}
				checkSummary(t, db, m, p, gaps, where)
				checkLag(t, db, m, p, where)
			}
			_ = db.Close()
		}
	}
}

// hasSink reports whether the model has rows of sink.
func (m model) hasSink(sink string) bool {
	for d := range m {
		if d.Sink == sink {
			return true
		}
	}
	return false
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
	// Listed: the sinks measured (any partition of the topic), and the
	// reference where it has rows or holes under the filters.
	listed := map[string]bool{}
	for _, sinks := range m.sinksOf(p) {
		for sink := range sinks {
			listed[sink] = true
		}
	}
	covered, gapCount, missing := map[string]*big.Int{}, map[string]int64{}, map[string]*big.Int{}
	for d, set := range m {
		if m.matches(d, p) {
			if d.Sink == ref {
				listed[ref] = true
			}
			covered[d.Sink] = new(big.Int).Add(bigOf(covered[d.Sink]), new(big.Int).SetUint64(set.Batches()))
		}
	}
	for _, g := range gaps {
		listed[g.Sink] = true
		gapCount[g.Sink]++
		missing[g.Sink] = new(big.Int).Add(bigOf(missing[g.Sink]), big.NewInt(g.End-g.Start))
	}
	if len(res.Rows) != len(listed) {
		t.Fatalf("%s: summary has %d sinks, want %d (%v): %v", where, len(res.Rows), len(listed), listed, res.Rows)
	}
	for _, v := range res.Rows {
		sink := v[0].(string)
		if !listed[sink] || bigOf(v[2]).Cmp(bigOf(covered[sink])) != 0 || v[3].(int64) != gapCount[sink] || bigOf(v[4]).Cmp(bigOf(missing[sink])) != 0 {
			t.Fatalf("%s: summary row %v; want covered %v, gaps %d, missing %v", where, v, covered[sink], gapCount[sink], missing[sink])
		}
	}
}

// bigOf is a result's whole number (int64 or *big.Int) as a big.Int; nil is 0.
func bigOf(v any) *big.Int {
	switch v := v.(type) {
	case int64:
		return big.NewInt(v)
	case *big.Int:
		if v != nil {
			return v
		}
	}
	return new(big.Int)
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
	if err := tbl.Append(ctx, durable.Checkpoint{Name: "pod/1", Writer: "pod", Ranges: []coverage.DestinationRanges{{
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

func appendRanges(t *testing.T, tbl *iceberg.Table, name string, rows map[coverage.Destination][]coverage.Range) {
	t.Helper()
	var drs []coverage.DestinationRanges
	for _, d := range slices.SortedFunc(maps.Keys(rows), coverage.Destination.Compare) {
		drs = append(drs, coverage.DestinationRanges{Destination: d, Ranges: rows[d]})
	}
	if err := tbl.Append(ctx, durable.Checkpoint{Name: name, Writer: "pod", Ranges: drs}); err != nil {
		t.Fatal(err)
	}
}

// TestPartitionFilterKeepsSinksThatNeverWroteIt: the lake wrote partition 0
// only; with $partition = 1 it is still behind by all of raw's partition 1
// (the sink list once came from rows already filtered by partition). The
// gap spec (internal/gapspec/testdata/gaps) checks the gaps and summary of
// this history; lag is checked here.
func TestPartitionFilterKeepsSinksThatNeverWroteIt(t *testing.T) {
	tbl := openTable(t)
	raw0, raw1 := coverage.Destination{Sink: "raw", Topic: "orders"}, coverage.Destination{Sink: "raw", Topic: "orders", Partition: 1}
	appendRanges(t, tbl, "pod/1", map[coverage.Destination][]coverage.Range{
		raw0: {{Start: 1, End: 10}}, raw1: {{Start: 1, End: 8}}, raw0.WithSink("lake"): {{Start: 1, End: 10}},
	})
	db, err := Open(ctx, tbl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	one := int32(1)
	res, err := db.Run(ctx, "lag", Params{Partition: &one})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 || res.Rows[0][0] != "lake" || res.Rows[0][3] != int64(7) {
		t.Fatalf("lag of partition 1: %v", res.Rows)
	}
}

// TestMisspeltReferenceIsRefused: a reference without rows in a table that
// has some is an error naming it and the sinks the table has, for every
// query measured against it, as it is for Plan. (The gaps and summary of
// raw's holes under sinks are the gap spec's, internal/gapspec/testdata/gaps.)
func TestMisspeltReferenceIsRefused(t *testing.T) {
	tbl := openTable(t)
	raw := coverage.Destination{Sink: "raw", Topic: "orders"}
	appendRanges(t, tbl, "pod/1", map[coverage.Destination][]coverage.Range{
		raw: {{Start: 6, End: 10}}, raw.WithSink("lake"): {{Start: 0, End: 10}}, raw.WithSink("search"): {{Start: 3, End: 10}},
	})
	db, err := Open(ctx, tbl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, name := range []string{"gaps", "summary", "lag"} {
		_, err := db.Run(ctx, name, Params{Reference: "rwa"})
		if !errors.Is(err, recovery.ErrNoReference) || !strings.Contains(err.Error(), `"rwa"`) || !strings.Contains(err.Error(), `"lake", "raw", "search"`) {
			t.Fatalf("%s with a misspelt reference: %v; want ErrNoReference naming it and the sinks", name, err)
		}
	}
}

// TestTotalsPastBigint: batches behind summed over ranges near
// coverage.MaxBatchEnd pass 2^63 (once a DuckDB Conversion Error) and come
// back exact. The summary's covered and missing totals past 2^64 are the
// gap spec's (internal/gapspec/testdata/gaps).
func TestTotalsPastBigint(t *testing.T) {
	tbl := openTable(t)
	rows := map[coverage.Destination][]coverage.Range{}
	full := coverage.Range{Start: 0, End: coverage.MaxBatchEnd}
	for part := range int32(3) {
		rows[coverage.Destination{Sink: "raw", Topic: "orders", Partition: part}] = []coverage.Range{full}
		rows[coverage.Destination{Sink: "lake", Topic: "orders", Partition: part}] = []coverage.Range{{Start: 0, End: 1}}
	}
	appendRanges(t, tbl, "pod/1", rows)
	db, err := Open(ctx, tbl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	three := new(big.Int).Mul(big.NewInt(3), new(big.Int).SetUint64(coverage.MaxBatchEnd-1))
	res, err := db.Run(ctx, "lag", Params{Sink: "lake"})
	if err != nil {
		t.Fatalf("lag: %v", err)
	}
	if len(res.Rows) != 1 || bigOf(res.Rows[0][3]).Cmp(three) != 0 {
		t.Fatalf("lag: %v, want %v batches behind", res.Rows, three)
	}
}
