package iceberg

import (
	"context"
	"strings"
	"testing"

	sqlcat "github.com/apache/iceberg-go/catalog/sql"
)

// TestOpenCatalogNeverPrintsTheURIsPassword: a catalog that cannot be
// opened is named by its uri's scheme, host and path only. A password may
// hold a ' (a valid character of a URL's user information, which pgx
// takes), a space or a " (which no URL parser takes): none is printed,
// whole or in part, nor a key or token in the uri's query.
func TestOpenCatalogNeverPrintsTheURIsPassword(t *testing.T) {
	const pw = "Sup3rS3cretPw"
	for _, uri := range []string{
		"postgres://u:" + pw + "'x@127.0.0.1:1/db",
		"postgres://u:" + pw + " x@127.0.0.1:1/db",
		"postgres://u:" + pw + "\"x@127.0.0.1:1/db",
		"postgres://u@127.0.0.1:1/db?sslpassword=" + pw,
	} {
		props := map[string]string{"type": "sql", "uri": uri, sqlcat.DriverKey: "pgx", sqlcat.DialectKey: "postgres",
			"warehouse": "file://" + t.TempDir(), "init_catalog_tables": "true"}
		_, err := OpenCatalog(context.Background(), "", props)
		if err == nil {
			t.Fatalf("uri %q: opened", uri)
		}
		if strings.Contains(err.Error(), pw[:8]) {
			t.Errorf("uri %q: the password is in the error: %v", uri, err)
		}
	}
}
