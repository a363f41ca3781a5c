package faultio_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/faultio"
)

var schema = ice.NewSchema(0,
	ice.NestedField{ID: 1, Name: "p", Type: ice.PrimitiveTypes.String, Required: true},
	ice.NestedField{ID: 2, Name: "v", Type: ice.PrimitiveTypes.Int64, Required: true})

func open(t *testing.T, in *faultio.Injector) (catalog.Catalog, *table.Table) {
	t.Helper()
	ctx := context.Background()
	props, err := iceberg.EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	inner, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	cat := faultio.WrapCatalog(inner, in)
	if err := cat.CreateNamespace(ctx, []string{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	spec := ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{1}, FieldID: 1000, Name: "p", Transform: ice.IdentityTransform{}})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"ns", "t"}, schema, catalog.WithPartitionSpec(&spec))
	if err != nil {
		t.Fatal(err)
	}
	return cat, tbl
}

// write writes one row per partition value and returns the files
// iceberg-go's writer produced, and its first error.
func write(t *testing.T, tbl *table.Table, parts ...string) ([]ice.DataFile, error) {
	t.Helper()
	as, _ := table.SchemaToArrowSchema(schema, nil, true, false)
	b := array.NewRecordBuilder(memory.DefaultAllocator, as)
	defer b.Release()
	for i, p := range parts {
		b.Field(0).(*array.StringBuilder).Append(p)
		b.Field(1).(*array.Int64Builder).Append(int64(i))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	var files []ice.DataFile
	seq := iter.Seq2[arrow.RecordBatch, error](func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) })
	for df, err := range table.WriteRecords(context.Background(), tbl, as, seq) {
		if err != nil {
			return files, err
		}
		files = append(files, df)
	}
	return files, nil
}

// One partition's creates fail; the other partition's file is written, and
// the event names the failed path.
func TestOnePartitionFails(t *testing.T) {
	in := faultio.New(1, faultio.Rule{Op: faultio.Create, Match: faultio.PartitionMatch("p", "b")})
	_, tbl := open(t, in)
	files, err := write(t, tbl, "a", "b")
	for _, df := range files {
		if strings.Contains(df.FilePath(), "/p=b/") {
			t.Fatalf("a file of the failing partition was reported: %s", df.FilePath())
		}
	}
	ev := in.Events()
	if len(ev) == 0 || !strings.Contains(ev[0].Path, "/p=b/") || ev[0].Op != faultio.Create {
		t.Fatalf("events %v, err %v", ev, err)
	}
	t.Logf("writer: %d files, err %v", len(files), err)
	if err != nil && !errors.Is(err, faultio.ErrInjected) {
		t.Fatalf("the writer's error does not wrap ErrInjected: %v", err)
	}
}

// A commit through the wrapped catalog keeps the faulty IO: the manifest
// write of the second commit fails, and the one after lands.
func TestCommitsKeepTheFaultyIO(t *testing.T) {
	ctx := context.Background()
	in := faultio.New(1)
	cat, tbl := open(t, in)
	for i := range 3 {
		if i == 1 {
			in.Add(faultio.Rule{Op: faultio.Create, Match: "/metadata/", Nth: 1})
		}
		files, err := write(t, tbl, "a")
		if err != nil {
			t.Fatal(err)
		}
		txn := tbl.NewTransaction()
		var next *table.Table
		err = txn.AddDataFiles(ctx, files, nil)
		if err == nil {
			next, err = txn.Commit(ctx)
		}
		if i == 1 {
			if !errors.Is(err, faultio.ErrInjected) {
				t.Fatalf("commit %d: %v, want an injected fault", i, err)
			}
			if tbl, err = cat.LoadTable(ctx, tbl.Identifier()); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
		tbl = next
	}
	if n := len(tbl.Metadata().Snapshots()); n != 2 {
		t.Fatalf("%d snapshots, want 2", n)
	}
}

// The same seed fails the same operations; another seed others; writes
// after success are on disk though reported failed.
func TestSeededFaultsAreDeterministic(t *testing.T) {
	dir := t.TempDir()
	run := func(seed uint64) string {
		in := faultio.New(seed, faultio.Rule{Op: faultio.Close, Prob: 0.5, AfterSuccess: true})
		fio := in.Wrap(icebergio.LocalFS{}).(icebergio.WriteFileIO)
		var out strings.Builder
		for i := range 64 {
			name := fmt.Sprintf("%s/%d-%d", dir, seed, i)
			err := fio.WriteFile(name, []byte("x"))
			if _, statErr := os.Stat(name); statErr != nil {
				t.Fatalf("a write failed after success is not on disk: %v", statErr)
			}
			if err != nil {
				fmt.Fprint(&out, i, " ")
			}
		}
		return out.String()
	}
	a, b, c := run(7), run(7), run(8)
	if a != b || a == c || a == "" {
		t.Fatalf("seed 7: %q and %q; seed 8: %q", a, b, c)
	}
}
