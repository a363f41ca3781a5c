package postgres

import (
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/catalogtest"
)

// TestConnectErrorQuotesTheDatabase: a database that does not exist, whose
// name holds a line break and a backquote, fails Open with an error that
// names it quoted (an escape, not a forged line), in the tier's name and
// in pgx's own connection error.
func TestConnectErrorQuotesTheDatabase(t *testing.T) {
	url := strings.Replace(catalogtest.PostgresURL(), "/test?", "/no%0Asuch%60db?", 1)
	if !strings.Contains(url, "%0A") {
		t.Skip("COVMIRROR_TEST_POSTGRES_URL has no /test? to replace")
	}
	_, err := Open(ctx, Options{URL: url, Schema: freshSchema(t), MaxAttempts: 1})
	if err == nil {
		t.Fatal("Open of a database that does not exist succeeded")
	}
	for _, want := range []string{`database "no\nsuch` + "`" + `db", schema`, `failed to connect to user "postgres" database "no\nsuch` + "`" + `db"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q; want it to hold %q", err, want)
		}
	}
}
