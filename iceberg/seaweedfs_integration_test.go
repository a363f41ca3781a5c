//go:build integration

package iceberg

import (
	"context"
	"testing"

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
	conformance(t, func(t testing.TB) *Table { return openREST(t, server) })
}

func TestPositionsConformanceSeaweedFS(t *testing.T) {
	server := seaweedtest.Start(t)
	positionsConformance(t, func(t testing.TB) *Table { return openREST(t, server) })
}
