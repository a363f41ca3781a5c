package redact

import (
	"errors"
	"net/url"
	"strings"
	"testing"
)

// TestRememberedSecretNeverLeaks: a secret remembered once is replaced by
// every later Text, Error and Bounded that is not given it, in the forms
// an echo gives it back in, and a short one is not (it would blank out
// ordinary words).
func TestRememberedSecretNeverLeaks(t *testing.T) {
	const secret = "Rm7/vendor+Secret&Value"
	Remember(secret, "abc")
	for _, in := range []string{
		"refused: X-Vendor-Auth: " + secret,
		"refused: ?h=" + url.QueryEscape(secret),
		`{"h":"` + strings.ReplaceAll(secret, "&", `\u0026`) + `"}`,
	} {
		for name, out := range map[string]string{
			"Text":    Text(in, false),
			"Error":   Error(errors.New(in)).Error(),
			"Bounded": Bounded(in, 200, false),
		} {
			if _, ok := leaked(out, secret); ok || !strings.Contains(out, Mark) {
				t.Errorf("%s(%q) = %q: the remembered secret is not replaced", name, in, out)
			}
		}
	}
	if got := Text("abc of it", false); got != "abc of it" {
		t.Errorf("a remembered secret shorter than MinSecret is replaced: %q", got)
	}
}
