package redact

import (
	"errors"
	"strings"
	"testing"
)

// TestErrorQuotesPgxConnectionTarget: pgx's connection error names the
// role and the database unquoted; Error quotes both, so that a line break
// in a database name prints as an escape, and still wraps the error.
func TestErrorQuotesPgxConnectionTarget(t *testing.T) {
	cause := errors.New("failed to connect to `user=covmirror database=lake\nFATAL: forged`: 127.0.0.1:5432 (127.0.0.1): server error: FATAL: database \"lake\" does not exist")
	got := Error(cause)
	if want := `failed to connect to user "covmirror" database "lake\nFATAL: forged": 127.0.0.1:5432`; !strings.Contains(got.Error(), want) {
		t.Errorf("%q; want it to hold %q", got, want)
	}
	if strings.Contains(got.Error(), "\n") {
		t.Errorf("%q: a line break of the database name prints as itself", got)
	}
	if !errors.Is(got, cause) {
		t.Errorf("%v no longer wraps its cause", got)
	}
}
