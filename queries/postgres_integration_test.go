//go:build integration

package queries

import (
	"testing"

	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/catalogtest"
)

// TestQueriesAgreeWithTheCoveragePackagePostgres runs the randomized query
// tests on tables in the SQL catalog on PostgreSQL (local warehouse: both
// bindings).
func TestQueriesAgreeWithTheCoveragePackagePostgres(t *testing.T) {
	open := func(t testing.TB) *iceberg.Table {
		cat, err := iceberg.OpenCatalog(ctx, "", catalogtest.PostgresProps(t))
		if err != nil {
			t.Fatal(catalogtest.Unreachable(err))
		}
		ns := catalogtest.Namespace()
		tbl, err := iceberg.Open(ctx, cat, iceberg.Options{Namespace: []string{ns}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cat.DropTable(ctx, tbl.Identifier())
			_ = cat.DropNamespace(ctx, []string{ns})
		})
		return tbl
	}
	queriesAgree(t, open, []Binding{ReadParquet, Scan})
}
