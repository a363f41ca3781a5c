package recovery

import (
	"strings"
	"testing"
)

// TestNoReferenceErrorQuotesTheSinks: the sinks a table has are names a
// caller gave, printed quoted, so that a comma or a line break inside one
// cannot make it read as two.
func TestNoReferenceErrorQuotesTheSinks(t *testing.T) {
	err := &NoReferenceError{Reference: "rwa", Sinks: []string{"lake, raw", "x\ny"}}
	if !strings.Contains(err.Error(), `the sinks "lake, raw", "x\ny":`) {
		t.Errorf("%v: the sinks are not quoted", err)
	}
}
