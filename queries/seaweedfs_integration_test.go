//go:build integration

package queries

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/seaweedtest"
)

// TestQueriesAgreeWithTheCoveragePackageSeaweedFS runs the queries over an
// S3 warehouse, where the coverage relation is bound by an iceberg-go scan
// (DuckDB's httpfs is not available offline), and refuses read_parquet.
func TestQueriesAgreeWithTheCoveragePackageSeaweedFS(t *testing.T) {
	server := seaweedtest.Start(t)
	open := func(t testing.TB) *iceberg.Table {
		cat, err := iceberg.OpenCatalog(ctx, "", server.Props())
		if err != nil {
			t.Fatalf("%s: %v", server, err)
		}
		tbl, err := iceberg.Open(ctx, cat, iceberg.Options{Namespace: []string{catalogtest.Namespace()}})
		if err != nil {
			t.Fatalf("%s: %v", server, err)
		}
		return tbl
	}
	queriesAgree(t, open, []Binding{"", Scan})

	tbl := open(t)
	randomTable(t, tbl, rand.New(rand.NewPCG(1, 1)), 2)
	db, err := Open(ctx, tbl, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Binding() != Scan {
		t.Fatalf("an S3 warehouse was bound by %s, want %s", db.Binding(), Scan)
	}
	if _, err := Open(ctx, tbl, Options{Binding: ReadParquet}); err == nil || !strings.Contains(err.Error(), "s3://") {
		t.Fatalf("read_parquet over an S3 warehouse: %v", err)
	}
}
