//go:build integration

package iceberg

import (
	"context"
	"testing"

	"github.com/covmirror/covmirror/internal/catalogtest"
)

// openPostgres opens a coverage table in its own namespace on PostgreSQL
// and drops it when the test ends. A PostgreSQL that cannot be reached
// fails the test with the way to start one: it is never skipped.
func openPostgres(t testing.TB) *Table {
	t.Helper()
	ctx := context.Background()
	cat, err := OpenCatalog(ctx, "", catalogtest.PostgresProps(t))
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	ns := catalogtest.Namespace()
	tbl, err := Open(ctx, cat, Options{Namespace: []string{ns}})
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	t.Cleanup(func() {
		_ = cat.DropTable(ctx, tbl.Identifier())
		_ = cat.DropNamespace(ctx, []string{ns})
	})
	return tbl
}

func TestConformancePostgres(t *testing.T) { conformance(t, openPostgres) }

func TestPositionsConformancePostgres(t *testing.T) { positionsConformance(t, openPostgres) }
