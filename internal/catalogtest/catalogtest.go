// Package catalogtest holds what the integration tests of several packages
// share about the catalogs they run on: the test PostgreSQL's address and
// catalog properties, and fresh namespace names. It is for tests only, and
// imports nothing of covmirror, so package iceberg's own tests can use it
// (internal/tabletest opens a coverage table for the other packages).
//
// The invariant it serves: tests on a shared server never see each other's
// tables, since each gets a namespace of its own.
package catalogtest

import (
	"crypto/rand"
	"os"
	"strings"
	"testing"
)

// PostgresURL is the PostgreSQL the integration tests use:
// COVMIRROR_TEST_POSTGRES_URL, else 127.0.0.1:5432, database test, which
// .ci/postgres.sh starts or installs.
func PostgresURL() string {
	if u := os.Getenv("COVMIRROR_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
}

// PostgresProps are SQL-catalog properties on the test PostgreSQL with a
// fresh local warehouse.
func PostgresProps(t testing.TB) map[string]string {
	return map[string]string{
		"type":                "sql",
		"uri":                 PostgresURL(),
		"sql.driver":          "pgx",
		"sql.dialect":         "postgres",
		"warehouse":           "file://" + t.TempDir(),
		"init_catalog_tables": "true",
	}
}

// Unreachable is the failure message for a test PostgreSQL that does not
// answer: how to start one. Such a test fails; it is never skipped.
func Unreachable(err error) string {
	return "PostgreSQL at " + PostgresURL() + " is not reachable (" + err.Error() + "): start it (bash .ci/postgres.sh, or set COVMIRROR_TEST_POSTGRES_URL)"
}

// Namespace is a fresh namespace name, lowercase as REST table buckets want.
func Namespace() string {
	return "covmirror_it_" + strings.ToLower(rand.Text()[:10])
}
