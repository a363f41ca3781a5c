//go:build integration

package iceberg

import (
	"context"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/coverage/coveragetest"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/seaweedtest"
)

// openREST opens a coverage table in its own namespace of the server's
// REST catalog (table names lowercase, as its table buckets want).
func openREST(t testing.TB, server *seaweedtest.Server) *Table {
	t.Helper()
	ctx := context.Background()
	cat, err := OpenCatalog(ctx, "", server.Props())
	if err != nil {
		t.Fatalf("%s: %v", server, err)
	}
	tbl, err := Open(ctx, cat, Options{Namespace: []string{catalogtest.Namespace()}})
	if err != nil {
		t.Fatalf("%s: %v", server, err)
	}
	return tbl
}

func TestConformanceSeaweedFS(t *testing.T) {
	server := seaweedtest.Start(t)
	coveragetest.Run(t, coveragetest.Harness{
		Open:           func(t *testing.T) coverage.Store { return NewStore(openREST(t, server), "test") },
		InOrderRecords: 20,
		Light:          true,
	})
}

func TestPositionsConformanceSeaweedFS(t *testing.T) {
	server := seaweedtest.Start(t)
	coveragetest.RunPositions(t, coveragetest.PositionHarness{
		Open: func(t *testing.T, sources ...coverage.Source) coverage.PositionStore {
			tbl := openREST(t, server)
			p, err := OpenPositions(context.Background(), tbl.Catalog(), tbl.opts, "", "test", sources...)
			if err != nil {
				t.Fatal(err)
			}
			return p
		},
		Light: true,
	})
}
