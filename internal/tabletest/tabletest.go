// Package tabletest opens coverage tables for the tests of packages above
// iceberg (mirror, queries, the sidecar, the simulation). It is for tests
// only.
//
// The invariant it serves: every test gets a table of its own, in a fresh
// embedded catalog under its own temporary directory.
package tabletest

import (
	"context"
	"testing"

	"github.com/covmirror/covmirror/iceberg"
)

// EmbeddedTable is a coverage table with default options in a fresh
// embedded catalog (SQLite and a local warehouse) under a test directory.
func EmbeddedTable(t testing.TB) *iceberg.Table {
	t.Helper()
	return EmbeddedTableIn(t, t.TempDir())
}

// EmbeddedTableIn opens the coverage table of the embedded catalog under
// dir, creating it if need be: the one a covmirror command with --state dir
// uses.
func EmbeddedTableIn(t testing.TB, dir string) *iceberg.Table {
	t.Helper()
	ctx := context.Background()
	props, err := iceberg.EmbeddedProps(dir)
	if err != nil {
		t.Fatal(err)
	}
	cat, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		t.Fatal(err)
	}
	table, err := iceberg.Open(ctx, cat, iceberg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return table
}
