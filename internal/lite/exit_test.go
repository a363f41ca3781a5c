package lite

import (
	"errors"
	"fmt"
	"testing"
)

// TestExitCodes: --exit-code's gaps are status 3, apart from success (0),
// a failure (1) and a usage error (2); main prints nothing for them.
func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		err   error
		code  int
		quiet bool
	}{
		{nil, 0, false}, {ErrHelp, 0, true}, {errors.New("boom"), 1, false},
		{UsageError{errors.New("bad flag")}, 2, false},
		{GapsFound(true, 2, nil), 3, true}, {fmt.Errorf("gaps: %w", ErrGapsFound), 3, true},
		{GapsFound(false, 2, nil), 0, false}, {GapsFound(true, 0, nil), 0, false},
		{GapsFound(true, 2, errors.New("write: broken pipe")), 1, false},
	} {
		if got := ExitCode(c.err); got != c.code {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.code)
		}
		if c.err != nil && Quiet(c.err) != c.quiet {
			t.Errorf("Quiet(%v) = %v, want %v", c.err, !c.quiet, c.quiet)
		}
	}
}
