package iceberg

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	ice "github.com/apache/iceberg-go"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/faultio"
)

func bigCommit(name, sink string, rows int) durable.Checkpoint {
	c := durable.Checkpoint{Name: name, Writer: "pod"}
	// 7 topics x 3 partitions, rows spread round robin, sorted by destination.
	per := map[coverage.Destination][]coverage.Range{}
	var order []coverage.Destination
	for i := range rows {
		d := coverage.Destination{Sink: sink, Topic: fmt.Sprintf("topic-%02d", i%7), Partition: int32(i % 3)}
		if _, ok := per[d]; !ok {
			order = append(order, d)
		}
		per[d] = append(per[d], coverage.Range{Start: uint64(i) * 10, End: uint64(i)*10 + 5})
	}
	for _, d := range order {
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: per[d]})
	}
	return c
}

func sameCoverage(t *testing.T, got, want map[coverage.Destination]*coverage.RangeSet) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d destinations, want %d", len(got), len(want))
	}
	for d, set := range want {
		if g := got[d]; g == nil || !g.Equal(set) {
			t.Fatalf("%s: got %d ranges, want %d", d, len(g.Ranges()), len(set.Ranges()))
		}
	}
}

func tableRows(t *testing.T, ctx context.Context, tbl *Table) int {
	t.Helper()
	cur, err := tbl.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := ReadRows(ctx, cur, durable.Filter{}, false, func(Row) error { n++; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}

// splitRewrites lowers the rows of a rewrite's files to n for one test.
func splitRewrites(t *testing.T, n int) {
	old := compactedFileRows
	compactedFileRows = n
	t.Cleanup(func() { compactedFileRows = old })
}

// TestRewriteSizes rewrites 0, 1, exactly the file size, one row more and
// two and a half files' rows: the files written and the rows read back.
func TestRewriteSizes(t *testing.T) {
	ctx := context.Background()
	splitRewrites(t, 100)
	for _, n := range []int{0, 1, compactedFileRows, compactedFileRows + 1, 250} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			props, err := EmbeddedProps(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			inner, err := OpenCatalog(ctx, "", props)
			if err != nil {
				t.Fatal(err)
			}
			tbl, err := Open(ctx, inner, Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := bigCommit("a", "big", n)
			if n == 0 {
				// a file to replace, of another sink's rows
				c = bigCommit("a", "big", 1)
			}
			if err := tbl.Append(ctx, c); err != nil {
				t.Fatal(err)
			}
			want, _ := tbl.Coverage(ctx, durable.Filter{})
			base, _ := tbl.Load(ctx)
			tasks, _ := DataFiles(ctx, base)
			var inputs []ice.DataFile
			for _, task := range tasks {
				inputs = append(inputs, task.File)
			}
			rw := bigCommit("rw", "big", n)
			rw.Writer = "compaction"
			written, err := tbl.Rewrite(ctx, base, inputs, rw, nil)
			t.Logf("rewrite of %d rows: %d files, err=%v", n, len(written), err)
			for _, f := range written {
				t.Logf("  file rows %d", f.Count())
			}
			if n == 0 {
				if err == nil {
					t.Fatalf("a rewrite of 0 rows replacing %d files committed", len(inputs))
				}
				got, _ := tbl.Coverage(ctx, durable.Filter{})
				sameCoverage(t, got, want)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if wantFiles := (n + compactedFileRows - 1) / compactedFileRows; len(written) != wantFiles {
				t.Errorf("%d files, want %d", len(written), wantFiles)
			}
			got, err := tbl.Coverage(ctx, durable.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			sameCoverage(t, got, want)
			if r := tableRows(t, ctx, tbl); r != n {
				t.Errorf("read %d rows, want %d", r, n)
			}
			// filtered reads: each (topic, partition) alone
			for d, set := range want {
				p := d.Partition
				one, err := tbl.Coverage(ctx, durable.Filter{Sink: d.Sink, Topic: d.Topic, Partition: &p})
				if err != nil {
					t.Fatal(err)
				}
				if len(one) != 1 || !one[d].Equal(set) {
					t.Fatalf("filtered read of %s: %d destinations", d, len(one))
				}
			}
		})
	}
}

// TestRewriteSliceFaults: a rewrite into five files whose 2nd, 3rd or
// 5th file fails (or lands but reports failure) commits nothing and loses
// nothing; then a clean rewrite goes through.
func TestRewriteSliceFaults(t *testing.T) {
	ctx := context.Background()
	inner := embeddedCatalog(t)
	inj := faultio.New(1)
	tbl, err := Open(ctx, faultio.WrapCatalog(inner, inj), Options{})
	if err != nil {
		t.Fatal(err)
	}
	splitRewrites(t, 100)
	const n = 250
	for i := range 2 {
		c := bigCommit(fmt.Sprintf("a%d", i), "big", n)
		// make the two appends distinct in range
		for j := range c.Ranges {
			for k := range c.Ranges[j].Ranges {
				c.Ranges[j].Ranges[k].Start += uint64(i) * 10 * n
				c.Ranges[j].Ranges[k].End += uint64(i) * 10 * n
			}
		}
		if err := tbl.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	want, err := tbl.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	rewriteAll := func(name string) ([]ice.DataFile, int, error) {
		base, err := tbl.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		tasks, err := DataFiles(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		var inputs []ice.DataFile
		for _, task := range tasks {
			inputs = append(inputs, task.File)
		}
		cov, err := ReadCoverage(ctx, base, durable.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		c := durable.Checkpoint{Name: name, Writer: "compaction"}
		for d, set := range cov {
			c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: set.Ranges()})
		}
		// sort as compaction does
		sortDR(c.Ranges)
		w, err := tbl.Rewrite(ctx, base, inputs, c, nil)
		return w, len(inputs), err
	}
	step := 0
	for _, op := range []faultio.Op{faultio.Create, faultio.Close} {
		for _, nth := range []int{2, 3, 5} {
			for _, after := range []bool{false, true} {
				step++
				inj.Clear()
				inj.Add(faultio.Rule{Op: op, Match: "/data/", Nth: nth, AfterSuccess: after})
				w, inputs, err := rewriteAll(fmt.Sprintf("rw%d", step))
				ev := inj.Events()
				inj.Clear()
				t.Logf("%s nth=%d after=%v: inputs %d, written %d, err=%v, events %d", op, nth, after, inputs, len(w), err, len(ev))
				got, cerr := tbl.Coverage(ctx, durable.Filter{})
				if cerr != nil {
					t.Fatal(cerr)
				}
				sameCoverage(t, got, want)
				if len(ev) > 0 && err == nil {
					t.Errorf("fault injected %v, rewrite returned nil", ev)
				}
			}
		}
	}
	// metadata faults during the rewrite's commit, landing but failing
	for _, op := range []faultio.Op{faultio.Create, faultio.Write, faultio.Close} {
		for _, nth := range []int{1, 2, 3} {
			step++
			inj.Clear()
			inj.Add(faultio.Rule{Op: op, Match: "/metadata/", Nth: nth, AfterSuccess: true})
			w, inputs, err := rewriteAll(fmt.Sprintf("rw%d", step))
			ev := inj.Events()
			inj.Clear()
			t.Logf("metadata %s nth=%d: inputs %d, written %d, err=%v, events %d", op, nth, inputs, len(w), err, len(ev))
			got, cerr := tbl.Coverage(ctx, durable.Filter{})
			if cerr != nil {
				t.Fatal(cerr)
			}
			sameCoverage(t, got, want)
		}
	}
	w, _, err := rewriteAll("final")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("final rewrite: %d files", len(w))
	if r := tableRows(t, ctx, tbl); r != 2*n {
		t.Errorf("rows %d, want %d", r, 2*n)
	}
}

func sortDR(drs []coverage.DestinationRanges) {
	slices.SortFunc(drs, func(a, b coverage.DestinationRanges) int {
		return cmp.Or(cmp.Compare(a.Destination.Sink, b.Destination.Sink), cmp.Compare(a.Destination.Topic, b.Destination.Topic),
			cmp.Compare(a.Destination.Partition, b.Destination.Partition))
	})
}

// TestReadBatches appends 20,000 rows of many destinations interleaved (not
// sorted) over 3 sinks: every filtered read (sink; sink+topic; sink+topic+partition;
// topic alone) returns exactly the rows written, recorded_at included.
func TestReadBatches(t *testing.T) {
	ctx := context.Background()
	inner := embeddedCatalog(t)
	tbl, err := Open(ctx, inner, Options{})
	if err != nil {
		t.Fatal(err)
	}
	const rows = 20000 // five row groups over three sinks
	c := durable.Checkpoint{Name: "a", Writer: "pod"}
	want := map[coverage.Destination]*coverage.RangeSet{}
	for i := range rows {
		d := coverage.Destination{Sink: fmt.Sprintf("s%d", i%3), Topic: fmt.Sprintf("t%02d", (i*7)%11), Partition: int32((i * 13) % 5)}
		r := coverage.Range{Start: uint64(i) * 10, End: uint64(i)*10 + 5}
		c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{r}})
		if want[d] == nil {
			want[d] = new(coverage.RangeSet)
		}
		_ = want[d].Add(r)
	}
	if err := tbl.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	cur, _ := tbl.Load(ctx)
	n := 0
	if err := ReadRows(ctx, cur, durable.Filter{}, true, func(r Row) error {
		n++
		if r.RecordedAt.IsZero() {
			return fmt.Errorf("zero recorded_at")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != rows {
		t.Fatalf("read %d rows, want %d", n, rows)
	}
	check := func(f durable.Filter) {
		got, err := tbl.Coverage(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		cnt := 0
		for d, set := range want {
			if !f.Match(d) {
				continue
			}
			cnt++
			if g := got[d]; g == nil || !g.Equal(set) {
				t.Fatalf("filter %+v: %s wrong", f, d)
			}
		}
		if len(got) != cnt {
			t.Fatalf("filter %+v: %d destinations, want %d", f, len(got), cnt)
		}
	}
	for s := range 3 {
		check(durable.Filter{Sink: fmt.Sprintf("s%d", s)})
		for tp := range 11 {
			check(durable.Filter{Sink: fmt.Sprintf("s%d", s), Topic: fmt.Sprintf("t%02d", tp)})
			for p := range int32(5) {
				check(durable.Filter{Sink: fmt.Sprintf("s%d", s), Topic: fmt.Sprintf("t%02d", tp), Partition: &p})
			}
		}
	}
	for tp := range 11 {
		check(durable.Filter{Topic: fmt.Sprintf("t%02d", tp)})
	}
}
