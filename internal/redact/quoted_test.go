package redact

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// TestQuotedValueWhole: a credential's value in double quotes (JSON, a
// YAML or TOML string, a quoted setting) is replaced up to its closing
// quote, a passphrase's spaces and escaped quotes included, or to the end
// of its line when the text was cut before that quote: no word of it
// after the first is printed, whatever the key and the spacing.
func TestQuotedValueWhole(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(uint64(seed), 1))
	word := func() string {
		const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		b := make([]byte, 6+r.IntN(6))
		for i := range b {
			b[i] = letters[r.IntN(len(letters))]
		}
		return string(b)
	}
	keys := []string{`"password"`, `password`, `"token"`, `client_secret`, `"private_key"`, `api-key`}
	seps := []string{`: `, `:`, ` = `, `=`}
	for i := 0; i < 500; i++ {
		words := []string{word(), word(), word()}
		value := strings.Join(words, " ")
		if r.IntN(2) == 0 {
			value = words[0] + ` \"` + words[1] + `\" ` + words[2] // JSON-escaped quotes
		}
		text := `{"user": "u", ` + keys[r.IntN(len(keys))] + seps[r.IntN(len(seps))] + `"` + value + `", "host": "h"}`
		cut := r.IntN(3) == 0
		if cut {
			text = text[:strings.Index(text, words[2])+len(words[2])]
		}
		got := Text(text, cut)
		for _, w := range words {
			if strings.Contains(got, w) {
				t.Fatalf("Text(%q, %v) = %q: %q is printed", text, cut, got, w)
			}
		}
		if !cut && !strings.Contains(got, `"host": "h"`) {
			t.Fatalf("Text(%q) = %q: the text after the value is gone", text, got)
		}
	}
}
