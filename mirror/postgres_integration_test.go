//go:build integration

package mirror

import (
	"crypto/rand"
	"os"
	"strings"
	"testing"
)

// TestTwoProcessesCheckpointConcurrentlyPostgres runs the two-owner test
// on the SQL catalog on PostgreSQL (127.0.0.1:5432, database test, or
// COVMIRROR_TEST_POSTGRES_URL).
func TestTwoProcessesCheckpointConcurrentlyPostgres(t *testing.T) {
	url := os.Getenv("COVMIRROR_TEST_POSTGRES_URL")
	if url == "" {
		url = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	props := map[string]string{"type": "sql", "uri": url, "sql.driver": "pgx", "sql.dialect": "postgres",
		"warehouse": "file://" + t.TempDir(), "init_catalog_tables": "true"}
	ns := "covmirror_it_" + strings.ToLower(rand.Text()[:10])
	e := newEnvWith(t, props, ns)
	t.Cleanup(func() {
		_ = e.cat.DropTable(ctx, e.table.Identifier())
		_ = e.cat.DropNamespace(ctx, []string{ns})
	})
	twoProcesses(t, e)
}
