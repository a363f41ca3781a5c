package redact

import (
	"slices"
	"testing"
)

// TestSecretsAreTheShapesParts: Secrets gives the credentials Text finds
// by shape, the password apart from its user too, so that a message
// quoting only a part of the value (a port after the colon) loses it.
func TestSecretsAreTheShapesParts(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://covmirror:Pw9xTail@db:5432/raw": "Pw9xTail",
		"password: Pw9xTail":                        "Pw9xTail",
		"https://h/o?X-Amz-Signature=Pw9xTail":      "Pw9xTail",
		"Authorization: Basic Pw9xTail":             "Pw9xTail",
		"token='Pw9xTail'":                          "Pw9xTail",
	} {
		got := Secrets(in)
		if !slices.Contains(got, want) {
			t.Errorf("Secrets(%q) = %q; want %q among them", in, got, want)
		}
		if msg := Text(`port "`+want+`" is not a number`, false, got...); msg != `port "`+Mark+`" is not a number` {
			t.Errorf("a part of %q quoted apart: %s", in, msg)
		}
	}
	if got := Secrets("iceberg, object or postgres at db:5432"); len(got) != 0 {
		t.Errorf("Secrets of a text without a credential = %q", got)
	}
}
