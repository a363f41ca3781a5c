//go:build integration

package iceberg

import (
	"context"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/coverage/coveragetest"
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

func TestConformancePostgres(t *testing.T) {
	coveragetest.Run(t, coveragetest.Harness{
		Open:           func(t *testing.T) coverage.Store { return NewStore(openPostgres(t), "test") },
		InOrderRecords: 20,
		Light:          true,
	})
}

func TestPositionsConformancePostgres(t *testing.T) {
	coveragetest.RunPositions(t, coveragetest.PositionHarness{
		Open: func(t *testing.T, sources ...coverage.Source) coverage.PositionStore {
			tbl := openPostgres(t)
			p, err := OpenPositions(context.Background(), tbl.Catalog(), tbl.opts, "", "test", sources...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = tbl.Catalog().DropTable(context.Background(), p.Table().Identifier()) })
			return p
		},
		Light: true,
	})
}
