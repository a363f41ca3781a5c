//go:build integration

package compaction

import (
	"testing"
	"time"

	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/catalogtest"
)

// postgresTable is a coverage table in a fresh namespace on the test
// PostgreSQL, dropped when the test ends, and the properties a child opens it with.
func postgresTable(t *testing.T) (map[string]string, *iceberg.Table) {
	t.Helper()
	props := catalogtest.PostgresProps(t)
	cat, err := iceberg.OpenCatalog(ctx, "", props)
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
	return props, tbl
}

func TestCompactionIsSetEqualAndFewerFilesPostgres(t *testing.T) {
	compactionIsSetEqual(t, func(t *testing.T) *iceberg.Table {
		_, tbl := postgresTable(t)
		return tbl
	})
}

func TestCheckpointsWhileCompactingPostgres(t *testing.T) {
	props, tbl := postgresTable(t)
	checkpointsWhileCompacting(t, props, tbl, 20*time.Second)
}

func TestCompactionKilledAtRandomPostgres(t *testing.T) {
	props, tbl := postgresTable(t)
	compactionKilledAtRandom(t, props, tbl, 10)
}
