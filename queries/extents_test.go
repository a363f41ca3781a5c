package queries

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/tabletest"
)

// randomExtents gives some partitions of the random tables an acked
// extent: from 0 or from a later batch, empty now and then, and some of
// partition 3, which randomTable never writes.
func randomExtents(r *rand.Rand) []coverage.Extent {
	var out []coverage.Extent
	for _, topic := range topics {
		for part := range int32(4) {
			if r.IntN(3) != 0 {
				continue
			}
			e := coverage.Extent{Topic: topic, Partition: part}
			if r.IntN(2) == 0 {
				e.Start = r.Uint64N(350)
			}
			e.End = e.Start + r.Uint64N(120)
			out = append(out, e)
		}
	}
	return out
}

// referenceSpans is, per selected partition, the span the reference must
// hold, as the recovery planner defines it (recovery.ReferenceHoles): the
// hull of the reference's own first to last covered batch, every other
// destination's rows there (a sink is written only once raw is durable)
// and the partition's acked extent (the source is acked only once raw is
// durable), so raw held every batch between. None when the sink filter
// excludes the reference, or when the reference has no rows in a table
// that has some (a misspelt reference).
func (m model) referenceSpans(p Params) map[coverage.Destination]coverage.Range {
	ref := cmpOr(p.Reference, coverage.RawSink)
	if (p.Sink != "" && p.Sink != ref) || (len(m) > 0 && !m.hasSink(ref)) {
		return nil
	}
	spans := map[coverage.Destination]coverage.Range{}
	extend := func(tp coverage.Destination, r coverage.Range) {
		if (p.Topic != "" && tp.Topic != p.Topic) || (p.Partition != nil && tp.Partition != *p.Partition) || r.Start >= r.End {
			return
		}
		if s, ok := spans[tp]; ok {
			r = coverage.Range{Start: min(s.Start, r.Start), End: max(s.End, r.End)}
		}
		spans[tp] = r
	}
	// hulls is already the hull of the reference's rows and the sinks'.
	for tp, hull := range m.hulls() {
		extend(tp, hull)
	}
	for _, e := range p.Extents {
		if r, ok := e.Range(); ok {
			extend(coverage.Destination{Topic: e.Topic, Partition: e.Partition}, r)
		}
	}
	return spans
}

// referenceHoles is, per selected partition, the reference's holes: its
// span less its coverage.
func (m model) referenceHoles(p Params) map[coverage.Destination]coverage.RangeSet {
	ref := cmpOr(p.Reference, coverage.RawSink)
	out := map[coverage.Destination]coverage.RangeSet{}
	for tp, span := range m.referenceSpans(p) {
		covered := m[tp.WithSink(ref)]
		if covered == nil {
			covered = new(coverage.RangeSet)
		}
		set, err := coverage.NewRangeSet(span)
		if err != nil {
			panic(fmt.Sprintf("the span %v of %v: %v", span, tp, err))
		}
		out[tp] = coverage.Gaps(&set, covered)
	}
	return out
}

// checkLag: the reference's row is there exactly where it is behind, and
// counts, per partition of its span, the batches of its holes past its
// last covered batch (all of them where it has none); every sink's row is
// what it is without extents (sinks are measured against the reference's
// rows alone).
func checkLag(t *testing.T, db *DB, m model, p Params, where string) {
	t.Helper()
	res, err := db.Run(ctx, "lag", p)
	if err != nil {
		t.Fatalf("%s: lag: %v", where, err)
	}
	ref := cmpOr(p.Reference, coverage.RawSink)
	var destinations, behind int64
	var batches, most uint64
	for tp, holes := range m.referenceHoles(p) {
		var from uint64
		if covered := m[tp.WithSink(ref)]; covered != nil {
			last, _ := covered.Last()
			from = last.End
		}
		var n uint64
		for r := range holes.All() {
			if r.Start >= from {
				n += r.Len()
			}
		}
		destinations++
		if n > 0 {
			behind++
		}
		batches += n
		most = max(most, n)
	}
	var sinkRows [][]any
	var refRow []any
	for _, row := range res.Rows {
		if row[0] == ref {
			refRow = row
		} else {
			sinkRows = append(sinkRows, row)
		}
	}
	if batches == 0 {
		if refRow != nil {
			t.Fatalf("%s: lag lists the reference, which is not behind: %v", where, refRow)
		}
	} else if refRow == nil || refRow[1] != destinations || refRow[2] != behind || bigOf(refRow[3]).Uint64() != batches || refRow[4] != int64(most) || refRow[6] != nil {
		t.Fatalf("%s: lag of the reference %v; want %d destinations, %d behind by %d batches, at most %d, and no reference time", where, refRow, destinations, behind, batches, most)
	}
	bare := p
	bare.Extents = nil
	plain, err := db.Run(ctx, "lag", bare)
	if err != nil {
		t.Fatalf("%s: lag without extents: %v", where, err)
	}
	var want [][]any
	for _, row := range plain.Rows {
		if row[0] != ref {
			want = append(want, row)
		}
	}
	if !reflect.DeepEqual(sinkRows, want) {
		t.Fatalf("%s: the sinks' lag moved with the extents:\nwith    %v\nwithout %v", where, sinkRows, want)
	}
}

// The history the extent cases run over: raw lost [20,25) of orders/0, and
// every destination lost orders/0 below 10 and from 40 (as far as their
// rows say); search wrote only [10,15). Orders/1 has no rows at all.
var extentHistory = map[coverage.Destination][]coverage.Range{
	{Sink: "raw", Topic: "orders"}:    {{Start: 10, End: 20}, {Start: 25, End: 40}},
	{Sink: "lake", Topic: "orders"}:   {{Start: 10, End: 40}},
	{Sink: "search", Topic: "orders"}: {{Start: 10, End: 15}},
}

// extentCase is one set of extents over extentHistory: the gaps query's
// rows, and the reference's summary (gaps, missing batches) and lag
// (destinations, behind, batches behind) rows, nil where it is not listed.
type extentCase struct {
	name    string
	p       Params
	gaps    []row
	summary []int64
	lag     []int64
}

func extentCases() []extentCase {
	one := int32(1)
	x := func(part int32, start, end uint64) coverage.Extent {
		return coverage.Extent{Topic: "orders", Partition: part, Start: start, End: end}
	}
	raw := func(part int32, start, end int64) row { return row{"raw", "orders", part, start, end} }
	// search's gaps are measured against raw's rows with or without
	// extents: its share of raw's holes is not yet a gap.
	search := []row{{"search", "orders", 0, 15, 20}, {"search", "orders", 0, 25, 40}}
	with := func(rows ...row) []row { return append(rows, search...) }
	return []extentCase{
		{"no extents", Params{}, with(raw(0, 20, 25)), []int64{1, 5}, nil},
		{"leading lost stretch", Params{Extents: []coverage.Extent{x(0, 0, 40)}}, with(raw(0, 0, 10), raw(0, 20, 25)), []int64{2, 15}, nil},
		{"trailing lost stretch", Params{Extents: []coverage.Extent{x(0, 10, 50)}}, with(raw(0, 20, 25), raw(0, 40, 50)), []int64{2, 15}, []int64{1, 1, 10}},
		{"start past 0, both ends lost", Params{Extents: []coverage.Extent{x(0, 5, 45)}}, with(raw(0, 5, 10), raw(0, 20, 25), raw(0, 40, 45)), []int64{3, 15}, []int64{1, 1, 5}},
		{"inside the window: no change", Params{Extents: []coverage.Extent{x(0, 12, 38)}}, with(raw(0, 20, 25)), []int64{1, 5}, nil},
		{"a partition with no rows", Params{Extents: []coverage.Extent{x(1, 0, 7)}}, with(raw(0, 20, 25), raw(1, 0, 7)), []int64{2, 12}, []int64{2, 1, 7}},
		// The span is the hull: the stretch between the window and an
		// extent apart from it is raw's to verify too.
		{"apart past the window", Params{Extents: []coverage.Extent{x(0, 60, 70)}}, with(raw(0, 20, 25), raw(0, 40, 70)), []int64{2, 35}, []int64{1, 1, 30}},
		{"apart before the window", Params{Extents: []coverage.Extent{x(0, 2, 6)}}, with(raw(0, 2, 10), raw(0, 20, 25)), []int64{2, 13}, nil},
		{"touching the window", Params{Extents: []coverage.Extent{x(0, 40, 45)}}, with(raw(0, 20, 25), raw(0, 40, 45)), []int64{2, 10}, []int64{1, 1, 5}},
		{"empty extent", Params{Extents: []coverage.Extent{x(0, 3, 3), x(1, 0, 0)}}, with(raw(0, 20, 25)), []int64{1, 5}, nil},
		{"partition filter", Params{Partition: &one, Extents: []coverage.Extent{x(0, 0, 50), x(1, 3, 7)}}, []row{raw(1, 3, 7)}, []int64{1, 4}, []int64{1, 1, 4}},
		{"another sink only", Params{Sink: "search", Extents: []coverage.Extent{x(0, 0, 50)}}, search, nil, nil},
		{"another topic", Params{Topic: "events", Extents: []coverage.Extent{x(0, 0, 50)}}, nil, nil, nil},
	}
}

// engineRun runs a canned query on one engine and gives its columns and
// its cells as text.
type engineRun func(name string, p Params) ([]string, [][]string, error)

// checkExtentCases runs every case on one engine.
func checkExtentCases(t *testing.T, engine string, run engineRun) {
	t.Helper()
	for _, c := range extentCases() {
		where := engine + ", " + c.name
		_, rows, err := run("gaps", c.p)
		if err != nil {
			t.Fatalf("%s: gaps: %v", where, err)
		}
		var want [][]string
		for _, r := range c.gaps {
			kind := "replay"
			if r.Sink == "raw" {
				kind = "verify-reference"
			}
			want = append(want, []string{r.Sink, r.Topic, fmt.Sprint(r.Partition), fmt.Sprint(r.Start), fmt.Sprint(r.End), kind, "NULL"})
		}
		if (len(rows) > 0 || len(want) > 0) && !reflect.DeepEqual(rows, want) {
			t.Fatalf("%s: gaps\n got %v\nwant %v", where, rows, want)
		}
		checkReferenceRow(t, where, "summary", run, c.p, []int{3, 4}, c.summary)
		checkReferenceRow(t, where, "lag", run, c.p, []int{1, 2, 3}, c.lag)
	}
}

// checkReferenceRow: the query's row of raw has want in the columns cols,
// or is absent for a nil want.
func checkReferenceRow(t *testing.T, where, name string, run engineRun, p Params, cols []int, want []int64) {
	t.Helper()
	_, rows, err := run(name, p)
	if err != nil {
		t.Fatalf("%s: %s: %v", where, name, err)
	}
	i := slices.IndexFunc(rows, func(r []string) bool { return r[0] == "raw" })
	if want == nil {
		if i >= 0 {
			t.Fatalf("%s: %s lists raw: %v", where, name, rows[i])
		}
		return
	}
	if i < 0 {
		t.Fatalf("%s: %s does not list raw: %v", where, name, rows)
	}
	for k, col := range cols {
		if rows[i][col] != fmt.Sprint(want[k]) {
			t.Fatalf("%s: %s row of raw %v; want %v in columns %v", where, name, rows[i], want, cols)
		}
	}
}

// duckRun runs on a DuckDB binding.
func duckRun(db *DB) engineRun {
	return func(name string, p Params) ([]string, [][]string, error) {
		res, err := db.Run(ctx, name, p)
		if err != nil {
			return nil, nil, err
		}
		return res.Columns, catalogtest.CellText(res.Rows), nil
	}
}

// TestAckedExtentsWidenReferenceHoles: the source's acked extents widen
// where raw's holes are looked for, on each DuckDB binding (the table's
// files, its scan, a durable tier): a first or last stretch every
// destination lost is a hole of raw, so is the stretch between the rows
// and an extent apart from them (the span is the hull), an extent over a
// partition without rows is one whole hole, one inside the window changes
// nothing, and the sinks' gaps stay measured against raw's rows. Summary and lag count the
// same holes. Over an empty table an extent is all hole; an invalid set of
// extents is refused.
func TestAckedExtentsWidenReferenceHoles(t *testing.T) {
	tbl := tabletest.EmbeddedTable(t)
	appendRanges(t, tbl, "pod/1", extentHistory)
	store := openObjectStore(t, nil)
	var drs []coverage.DestinationRanges
	for d, rs := range extentHistory {
		drs = append(drs, coverage.DestinationRanges{Destination: d, Ranges: rs})
	}
	if err := store.Append(ctx, durable.Checkpoint{Name: "pod/1", Writer: "pod", Ranges: drs}); err != nil {
		t.Fatal(err)
	}
	for _, binding := range []Binding{ReadParquet, Scan, FromTier} {
		var db *DB
		var err error
		if binding == FromTier {
			db, err = OpenTier(ctx, store, Options{})
		} else {
			db, err = Open(ctx, tbl, Options{Binding: binding})
		}
		if err != nil {
			t.Fatal(err)
		}
		checkExtentCases(t, string(binding), duckRun(db))
		_ = db.Close()
	}

	db, err := Open(ctx, tabletest.EmbeddedTable(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p := Params{Extents: []coverage.Extent{{Topic: "orders", Start: 4, End: 9}}}
	res, err := db.Run(ctx, "gaps", p)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := destinationRows(t, res), []row{{"raw", "orders", 0, 4, 9}}; !slices.Equal(got, want) {
		t.Fatalf("gaps of an empty table with an extent: %s", rowDiff(got, want))
	}
	for _, bad := range [][]coverage.Extent{
		{{Topic: "orders", Start: 9, End: 4}},
		{{Topic: "orders", End: 4}, {Topic: "orders", End: 5}},
		{{Topic: "", End: 4}},
	} {
		for _, name := range []string{"gaps", "summary", "lag"} {
			if _, err := db.Run(ctx, name, Params{Extents: bad}); !errors.Is(err, coverage.ErrInvalidExtent) {
				t.Fatalf("%s with extents %v: %v, want ErrInvalidExtent", name, bad, err)
			}
		}
	}
	// Each run binds its own extents, and refused ones bound nothing.
	if res, err := db.Run(ctx, "gaps", Params{}); err != nil || len(res.Rows) != 0 {
		t.Fatalf("gaps of an empty table without extents: %v, %v", res, err)
	}
	if res, err := db.Run(ctx, "lag", p); err != nil || len(res.Rows) != 1 || bigOf(res.Rows[0][3]).Int64() != 5 {
		t.Fatalf("lag of an empty table with an extent: %v, %v", res, err)
	}
}
