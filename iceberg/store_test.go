package iceberg

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go/catalog"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/coverage/coveragetest"
)

// openEmbedded opens the coverage table in a fresh embedded catalog (SQLite
// file and local warehouse under a temporary directory).
func openEmbedded(t testing.TB) *Table {
	t.Helper()
	props, err := EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return openWith(t, props)
}

// embeddedCatalog is a SQLite catalog over a warehouse in a temporary
// directory, for tests that wrap it.
func embeddedCatalog(t testing.TB) catalog.Catalog {
	t.Helper()
	props, err := EmbeddedProps(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cat, err := OpenCatalog(context.Background(), "", props)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func openWith(t testing.TB, props map[string]string) *Table {
	t.Helper()
	cat, err := OpenCatalog(context.Background(), "", props)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := Open(context.Background(), cat, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func TestPositionsConformanceEmbedded(t *testing.T) { positionsConformance(t, openEmbedded) }

// positionsConformance runs the shared PositionStore suite on a positions
// table beside each coverage table open makes, dropped when the test ends.
func positionsConformance(t *testing.T, open func(testing.TB) *Table) {
	coveragetest.RunPositions(t, coveragetest.PositionHarness{
		Open: func(t *testing.T, sources ...coverage.Source) coverage.PositionStore {
			tbl := open(t)
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
