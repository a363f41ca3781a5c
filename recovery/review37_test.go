package recovery

import (
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// TestHeldErrorsQuoteTheSinksWords: a refusal's reason is the sink's own
// answer; its error text, which Recover returns and a caller logs, carries
// no control character and no line break of it.
func TestHeldErrorsQuoteTheSinksWords(t *testing.T) {
	hostile := "400\x1b[2J\r\nlevel=INFO msg=\"all replayed\"\x00"
	for _, err := range []error{
		&RefusedError{Reason: hostile},
		&UnrecoverableError{Reason: hostile, Ranges: []coverage.Range{{Start: 1, End: 2}}},
	} {
		if text := err.Error(); strings.ContainsAny(text, "\x1b\r\n\x00") {
			t.Errorf("%T's text carries the sink's control characters as they are: %q", err, text)
		}
	}
}
