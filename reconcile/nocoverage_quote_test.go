package reconcile

import (
	"strings"
	"testing"
)

// TestNoCoverageErrorQuotesTheSinks: the sinks with coverage are names a
// caller gave, printed quoted, so that a comma or a line break inside one
// cannot make it read as two.
func TestNoCoverageErrorQuotesTheSinks(t *testing.T) {
	err := &NoCoverageError{Sink: "lkae", Sinks: []string{"lake, raw", "x\ny"}}
	if !strings.Contains(err.Error(), `the sinks ["lake, raw", "x\ny"]:`) {
		t.Errorf("%v: the sinks are not quoted", err)
	}
}
