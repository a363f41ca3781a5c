//go:build integration

package iceberg

import (
	"context"
	"crypto/rand"
	"os"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/coverage/coveragetest"
)

// postgresURL is the PostgreSQL the integration tests use; CI starts it.
func postgresURL() string {
	if u := os.Getenv("COVMIRROR_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// PostgresProps are SQL-catalog properties on the test PostgreSQL with a
// fresh local warehouse.
func postgresProps(t testing.TB) map[string]string {
	return map[string]string{
		"type":                "sql",
		"uri":                 postgresURL(),
		"sql.driver":          "pgx",
		"sql.dialect":         "postgres",
		"warehouse":           "file://" + t.TempDir(),
		"init_catalog_tables": "true",
	}
}

// openPostgres opens a coverage table in its own namespace on PostgreSQL
// and drops it when the test ends. A PostgreSQL that cannot be reached
// fails the test with the way to start one: it is never skipped.
func openPostgres(t testing.TB) *Table {
	t.Helper()
	ctx := context.Background()
	cat, err := OpenCatalog(ctx, "", postgresProps(t))
	if err != nil {
		t.Fatalf("PostgreSQL at %s is not reachable (%v): start it (pg_ctlcluster <version> main start, or set COVMIRROR_TEST_POSTGRES_URL)", postgresURL(), err)
	}
	ns := "covmirror_it_" + strings.ToLower(rand.Text()[:10])
	tbl, err := Open(ctx, cat, Options{Namespace: []string{ns}})
	if err != nil {
		t.Fatalf("PostgreSQL at %s: %v (start it with pg_ctlcluster, or set COVMIRROR_TEST_POSTGRES_URL)", postgresURL(), err)
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
