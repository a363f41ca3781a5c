//go:build integration

package compaction

import (
	"testing"
	"time"

	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/seaweedtest"
)

// restTable is a coverage table in namespace ns of the server's REST
// catalog, and the catalog properties a child process opens it with.
func restTable(t *testing.T, server *seaweedtest.Server, ns string) (map[string]string, *iceberg.Table) {
	t.Helper()
	cat, err := iceberg.OpenCatalog(ctx, "", server.Props())
	if err != nil {
		t.Fatalf("%s: %v", server, err)
	}
	tbl, err := iceberg.Open(ctx, cat, iceberg.Options{Namespace: []string{ns}})
	if err != nil {
		t.Fatalf("%s: %v", server, err)
	}
	return server.Props(), tbl
}

func TestCompactionIsSetEqualAndFewerFilesSeaweedFS(t *testing.T) {
	server := seaweedtest.Start(t)
	compactionIsSetEqual(t, func(t *testing.T) *iceberg.Table {
		_, tbl := restTable(t, server, catalogtest.Namespace())
		return tbl
	})
}

func TestCheckpointsWhileCompactingSeaweedFS(t *testing.T) {
	props, tbl := restTable(t, seaweedtest.Start(t), "covmirror")
	checkpointsWhileCompacting(t, props, tbl, 20*time.Second)
}

func TestCompactionKilledAtRandomSeaweedFS(t *testing.T) {
	props, tbl := restTable(t, seaweedtest.Start(t), "covmirror")
	compactionKilledAtRandom(t, props, tbl, 10)
}
