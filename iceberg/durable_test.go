package iceberg

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// seqTxCatalog gives the embedded SQL catalog multi-table transactions by
// committing each table in turn: not atomic, but enough for TableSink's
// multi-table path to run on real commits in tests that do not crash
// between the two.
type seqTxCatalog struct{ catalog.Catalog }

func (c *seqTxCatalog) CommitTransaction(ctx context.Context, commits []table.TableCommit) error {
	for _, tc := range commits {
		if _, _, err := c.CommitTable(ctx, tc.Identifier, tc.Requirements, tc.Updates); err != nil {
			return err
		}
	}
	return nil
}

func (c *seqTxCatalog) LoadTable(ctx context.Context, id table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, id)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func localPath(t testing.TB, loc string) string {
	t.Helper()
	return strings.TrimPrefix(loc, "file://")
}

// blockDir puts an empty plain file where a partition directory must go.
func blockDir(t testing.TB, tableLoc string, segments ...string) {
	t.Helper()
	dir := filepath.Join(localPath(t, tableLoc), "data")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, s := range segments {
		if err := os.WriteFile(filepath.Join(dir, s), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func dr(sink string, start, end uint64) coverage.DestinationRanges {
	return coverage.DestinationRanges{Destination: coverage.Destination{Sink: sink, Topic: "t"}, Ranges: []coverage.Range{{Start: start, End: end}}}
}

// An Append whose lake partition cannot be written fails and commits
// nothing, though iceberg-go's writer returns without an error.
func TestAppendWithAnUnwritablePartitionCommitsNothing(t *testing.T) {
	ctx := context.Background()
	tbl := openEmbedded(t)
	if err := tbl.Append(ctx, durable.Checkpoint{Name: "c1", Writer: "pod", Ranges: []coverage.DestinationRanges{dr("raw", 0, 10)}}); err != nil {
		t.Fatal(err)
	}
	loaded, _ := tbl.Load(ctx)
	blockDir(t, loaded.Location(), "sink_key=lake", "sink=lake")
	err := tbl.Append(ctx, durable.Checkpoint{Name: "c2", Writer: "pod", Ranges: []coverage.DestinationRanges{
		dr("raw", 10, 20), dr("lake", 10, 20), dr("wh", 10, 20), dr("search", 10, 20)}})
	// iceberg-go's writer reports the failed partition or not, as its
	// goroutines happen to run; either way nothing may be committed.
	if !errors.Is(err, ErrUnverifiedWrite) && !errors.Is(err, coverage.ErrUnavailable) {
		t.Fatalf("append with lake's partition unwritable: %v, want ErrUnverifiedWrite or ErrUnavailable", err)
	}
	all, err := tbl.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 || all[coverage.Destination{Sink: "raw", Topic: "t"}].String() != "{[0,10)}" {
		t.Fatalf("the table holds %v after a failed append", all)
	}
}

var regionSchema = ice.NewSchema(0,
	ice.NestedField{ID: 1, Name: "batch_id", Type: ice.PrimitiveTypes.Int64, Required: true},
	ice.NestedField{ID: 2, Name: "region", Type: ice.PrimitiveTypes.String, Required: true})

// createRegionSink creates a sink table partitioned by region.
func createRegionSink(t testing.TB, cov *Table) (table.Identifier, string) {
	t.Helper()
	ident := table.Identifier{cov.ident[0], "regions"}
	spec := ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region", Transform: ice.IdentityTransform{}})
	tbl, err := cov.cat.CreateTable(context.Background(), ident, regionSchema, catalog.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatal(err)
	}
	return ident, tbl.Location()
}

// regionRows is one row per batch of r, alternating regions a and b.
func regionRows(r coverage.Range) arrow.RecordBatch {
	schema, _ := table.SchemaToArrowSchema(regionSchema, nil, true, false)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for id := r.Start; id < r.End; id++ {
		b.Field(0).(*array.Int64Builder).Append(int64(id))
		b.Field(1).(*array.StringBuilder).Append(string(rune('a' + id%2)))
	}
	return b.NewRecordBatch()
}

func openTxEmbedded(t testing.TB) *Table {
	t.Helper()
	props, err := EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inner, err := OpenCatalog(context.Background(), "", props)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := Open(context.Background(), &seqTxCatalog{Catalog: inner}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// tableSinkPaths runs f on both of TableSink's paths: write-then-record
// through a fallback store, and the multi-table commit.
func tableSinkPaths(t *testing.T, f func(t *testing.T, cov *Table, store coverage.Store, covered func(coverage.Destination) string)) {
	t.Run("fallback", func(t *testing.T) {
		cov := openEmbedded(t)
		store := coverage.NewInMemory()
		f(t, cov, store, func(d coverage.Destination) string {
			got, _ := store.Covered(context.Background(), d)
			return got.String()
		})
	})
	t.Run("multi-table", func(t *testing.T) {
		cov := openTxEmbedded(t)
		f(t, cov, nil, func(d coverage.Destination) string {
			all, err := cov.Coverage(context.Background(), durable.Filter{})
			if err != nil {
				t.Fatal(err)
			}
			if set := all[d]; set != nil {
				return set.String()
			}
			return "{}"
		})
	})
}

// A TableSink write whose partition b cannot be written records nothing.
func TestTableSinkWithAnUnwritablePartitionRecordsNothing(t *testing.T) {
	tableSinkPaths(t, func(t *testing.T, cov *Table, store coverage.Store, covered func(coverage.Destination) string) {
		ident, loc := createRegionSink(t, cov)
		blockDir(t, loc, "region=b")
		s := newTableSink(t, TableSinkOptions{Coverage: cov, Sink: ident, Writer: "pod", Fallback: store})
		d := coverage.Destination{Sink: "regions", Topic: "t"}
		r := coverage.Range{Start: 0, End: 10}
		// iceberg-go's writer reports the failed partition or not, as its
		// goroutines happen to run; either way nothing may be recorded.
		err := s.Write(context.Background(), "pod/1", d, r, regionRows(r))
		if !errors.Is(err, ErrUnverifiedWrite) && !errors.Is(err, coverage.ErrUnavailable) {
			t.Fatalf("write with region b unwritable: %v, want ErrUnverifiedWrite or ErrUnavailable", err)
		}
		if got := covered(d); got != "{}" {
			t.Fatalf("coverage %s recorded for a write that failed", got)
		}
	})
}

// A name is bound to its writer and payload: another writer's "42" is no
// match, and the same writer's "42" for another range is ErrNameReused.
func TestTableSinkNameIsBoundToWriterAndPayload(t *testing.T) {
	tableSinkPaths(t, func(t *testing.T, cov *Table, store coverage.Store, covered func(coverage.Destination) string) {
		ctx := context.Background()
		ident := createSinkTable(t, cov)
		a := newTableSink(t, TableSinkOptions{Coverage: cov, Sink: ident, Writer: "pod-a", Fallback: store})
		b := newTableSink(t, TableSinkOptions{Coverage: cov, Sink: ident, Writer: "pod-b", Fallback: store})
		d0 := coverage.Destination{Sink: "lakehouse", Topic: "t", Partition: 0}
		d1 := coverage.Destination{Sink: "lakehouse", Topic: "t", Partition: 1}
		r0, r1 := coverage.Range{Start: 0, End: 5}, coverage.Range{Start: 100, End: 105}
		if err := a.Write(ctx, "42", d0, r0, sinkRows(r0)); err != nil {
			t.Fatal(err)
		}
		if err := b.Write(ctx, "42", d1, r1, sinkRows(r1)); err != nil {
			t.Fatal(err)
		}
		if got := sinkBatches(t, cov, ident).String(); got != "{[0,5) [100,105)}" {
			t.Fatalf("the sink table holds %s: pod-b's write was skipped", got)
		}
		if err := a.Write(ctx, "42", d0, r0, sinkRows(r0)); err != nil {
			t.Fatalf("the same write again: %v", err)
		}
		r2 := coverage.Range{Start: 5, End: 10}
		if err := a.Write(ctx, "42", d0, r2, sinkRows(r2)); !errors.Is(err, durable.ErrNameReused) {
			t.Fatalf("pod-a reusing 42 for another range: %v, want durable.ErrNameReused", err)
		}
		if got := sinkBatches(t, cov, ident).String(); got != "{[0,5) [100,105)}" {
			t.Fatalf("the sink table holds %s", got)
		}
		if got := covered(d0); got != "{[0,5)}" {
			t.Fatalf("partition 0 covered %s", got)
		}
		if got := covered(d1); got != "{[100,105)}" {
			t.Fatalf("partition 1 covered %s", got)
		}
	})
}

// An Append reusing its name for other ranges is ErrNameReused; Landed
// matches the writer.
func TestAppendNameIsBoundToWriterAndPayload(t *testing.T) {
	ctx := context.Background()
	tbl := openEmbedded(t)
	c := durable.Checkpoint{Name: "7", Writer: "pod-a", Ranges: []coverage.DestinationRanges{dr("lake", 0, 5)}}
	if err := tbl.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.MayHaveLanded = true
	if err := tbl.Append(ctx, c); err != nil {
		t.Fatal(err)
	}
	c.Ranges = []coverage.DestinationRanges{dr("lake", 5, 9)}
	if err := tbl.Append(ctx, c); !errors.Is(err, durable.ErrNameReused) {
		t.Fatalf("reuse of a name for other ranges: %v, want durable.ErrNameReused", err)
	}
	c.Writer = "pod-b"
	if err := tbl.Append(ctx, c); err != nil {
		t.Fatalf("another writer's name: %v", err)
	}
	if ok, _ := tbl.Landed(ctx, "pod-c", "7"); ok {
		t.Fatal("Landed matched another writer's checkpoint")
	}
	if ok, _ := tbl.Landed(ctx, "pod-b", "7"); !ok {
		t.Fatal("pod-b's checkpoint did not land")
	}
	all, _ := tbl.Coverage(ctx, durable.Filter{})
	if got := all[coverage.Destination{Sink: "lake", Topic: "t"}].String(); got != "{[0,9)}" {
		t.Fatalf("lake covered %s", got)
	}
}

var hostile = []string{"..", "../x", "/abs", "a/b", "%2e%2e", "%2F..%2F..", "sink=..", "../../../../../../PWNED",
	"~7E", "a~~b", " spaced ", "ünïcødé/名前", "x\u202ey", strings.Repeat("é", 512), strings.Repeat("/..", 341)}

// Every name the model accepts maps to a safe path: nothing is created
// outside the table's location, every checkpoint lands and reads back
// exactly, and SinkOf names each file's sink.
func TestHostileSinkNamesStayInTheTable(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	state := filepath.Join(root, "a", "b", "c", "d", "e", "f", "state")
	props, err := EmbeddedProps(state)
	if err != nil {
		t.Fatal(err)
	}
	tbl := openWith(t, props)
	want := map[coverage.Destination]string{}
	for i, name := range hostile {
		d := coverage.Destination{Sink: name, Topic: name, Partition: int32(i)}
		if err := d.Validate(); err != nil {
			t.Fatalf("the model refuses %q: %v", name, err)
		}
		r := coverage.Range{Start: uint64(i) * 10, End: uint64(i)*10 + 5}
		if err := tbl.Append(ctx, durable.Checkpoint{Name: "c" + string(rune('a'+i)), Writer: "pod",
			Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{r}}}}); err != nil {
			t.Fatalf("append for sink %q: %v", name, err)
		}
		set := new(coverage.RangeSet)
		_ = set.Add(r)
		want[d] = set.String()
	}
	for d, w := range want {
		all, err := tbl.Coverage(ctx, durable.Filter{Sink: d.Sink, Topic: d.Topic, Partition: &d.Partition})
		got := "none"
		if set := all[d]; set != nil {
			got = set.String()
		}
		if err != nil || got != w {
			t.Fatalf("sink %q reads back %s, %v; want %s", d.Sink, got, err, w)
		}
	}
	loaded, _ := tbl.Load(ctx)
	loc := localPath(t, loaded.Location())
	tasks, err := DataFiles(ctx, loaded)
	if err != nil {
		t.Fatal(err)
	}
	sinks := map[string]bool{}
	for _, task := range tasks {
		sink, ok := SinkOf(task.File)
		if !ok {
			t.Fatalf("SinkOf(%s) names no sink", task.File.FilePath())
		}
		sinks[sink] = true
	}
	for _, name := range hostile {
		if !sinks[name] {
			t.Fatalf("SinkOf named no file's sink %q", name)
		}
	}
	// The gap states table beside it is the tier's too.
	st, err := tbl.StatesTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stLoaded, _ := st.Load(ctx)
	assertOnlyUnder(t, root, loc, state, localPath(t, stLoaded.Location()))
}

// assertOnlyUnder fails for any file under root but outside loc (and
// the other locations given), other than the catalog's own files in state.
func assertOnlyUnder(t *testing.T, root, loc, state string, others ...string) {
	t.Helper()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		for _, l := range append([]string{loc}, others...) {
			if strings.HasPrefix(path, l+string(filepath.Separator)) {
				return nil
			}
		}
		if filepath.Dir(path) == state && strings.HasPrefix(filepath.Base(path), "catalog.db") {
			return nil
		}
		t.Errorf("file outside the table's location: %s", path)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Hostile source names of the positions table stay in it and read back.
func TestHostileSourceNamesStayInThePositionsTable(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	state := filepath.Join(root, "a", "b", "c", "d", "e", "f", "state")
	props, _ := EmbeddedProps(state)
	tbl := openWith(t, props)
	var sources []coverage.Source
	for _, name := range hostile {
		sources = append(sources, coverage.Source{Name: name, Regime: coverage.Stored})
	}
	p, err := OpenPositions(ctx, tbl.Catalog(), tbl.opts, "", "pod", sources...)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range hostile {
		pos := coverage.Position{Source: name, Partition: int32(i), Cursor: []byte(name), Batch: uint64(i)}
		if err := p.SavePosition(ctx, pos); err != nil {
			t.Fatalf("save for source %q: %v", name, err)
		}
	}
	for i, name := range hostile {
		got, err := p.Positions(ctx, name, int32(i))
		if err != nil || len(got) != 1 || string(got[0].Cursor) != name || got[0].Batch != uint64(i) {
			t.Fatalf("source %q reads back %v, %v", name, got, err)
		}
	}
	loaded, _ := p.Table().Load(ctx)
	// The coverage table is beside it, in the same namespace.
	assertOnlyUnder(t, root, filepath.Dir(localPath(t, loaded.Location())), state)
}

// A table of the first shape (partitioned by the raw sink name) is refused
// and left alone.
func TestOldShapeTableIsRefused(t *testing.T) {
	ctx := context.Background()
	props, _ := EmbeddedProps(t.TempDir())
	cat, err := OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	_ = cat.CreateNamespace(ctx, []string{"covmirror"}, nil)
	old := ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: ColSink, Transform: ice.IdentityTransform{}})
	if _, err := cat.CreateTable(ctx, []string{"covmirror", "coverage"}, CoverageSchema(), catalog.WithPartitionSpec(&old),
		catalog.WithProperties(ice.Properties{"covmirror.schema": "coverage/1"})); err != nil {
		t.Fatal(err)
	}
	_, err = Open(ctx, cat, Options{})
	if !errors.Is(err, ErrIncompatibleTable) || !strings.Contains(err.Error(), "new table name") {
		t.Fatalf("open of an old-shape table: %v", err)
	}
}
