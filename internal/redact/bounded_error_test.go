package redact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestBoundedErrorCutsAfterRedacting: a long error, a secret across the
// cut, is redacted, then cut to the bound, and still wraps its cause; a
// short one is as Error gives it.
func TestBoundedErrorCutsAfterRedacting(t *testing.T) {
	const secret = "Zq81fa77-secret-token"
	long := fmt.Errorf("%w: %s%s%s", context.DeadlineExceeded, strings.Repeat("a", 60), secret, strings.Repeat("b", 1<<20))
	err := BoundedError(long, 100, secret)
	if n := len(err.Error()); n > 103 {
		t.Errorf("%d bytes; want at most 100 and the mark", n)
	}
	if _, bad := leaked(err.Error(), secret); bad {
		t.Errorf("a piece of the secret in %q", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("%v no longer wraps its cause", err)
	}
	if short := fmt.Errorf("x %s", secret); BoundedError(short, 100, secret).Error() != "x "+Mark {
		t.Errorf("a short error: %q", BoundedError(short, 100, secret))
	}
}
