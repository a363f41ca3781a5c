package redact

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/url"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/testseed"
)

// encodings are the forms in which a server that echoes a request may
// give a known secret back: JSON string contents (Go's, which escapes <, >
// and & as \u003c, and one that does not), percent-encoding (a query's and
// a path's, upper- and lower-case hex).
var encodings = []struct {
	name string
	enc  func(string) string
}{
	{"json", func(s string) string { b, _ := json.Marshal(s); return string(b[1 : len(b)-1]) }},
	{"json without html escapes", func(s string) string {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		_ = e.Encode(s)
		return strings.TrimSuffix(b.String(), "\n")[1 : b.Len()-2]
	}},
	{"json upper-case \\u", func(s string) string {
		b, _ := json.Marshal(s)
		return strings.NewReplacer(`\u003c`, `\u003C`, `\u003e`, `\u003E`).Replace(string(b[1 : len(b)-1]))
	}},
	{"query", url.QueryEscape},
	{"path", url.PathEscape},
	{"query, lower-case hex", func(s string) string { return lowerHex(url.QueryEscape(s)) }},
}

func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1], b[i+2] = bytes.ToLower(b[i+1 : i+2])[0], bytes.ToLower(b[i+2 : i+3])[0]
		}
	}
	return string(b)
}

// TestEncodedSecretNeverLeaks: a known secret (a token of visible ASCII,
// with the characters JSON and percent-encoding rewrite) that an echo
// gives back encoded, in a JSON echo of the headers or alone, at every
// offset around the read bound and the print bound, never shows, decoded
// or encoded, whole or by an 8-byte prefix.
func TestEncodedSecretNeverLeaks(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	const readBound, printBound = 300, 200
	for _, e := range encodings {
		for _, wrap := range []func(string) string{
			func(s string) string { return `{"headers":{"Authorization":["Bearer ` + s + `"]}}` },
			func(s string) string { return "echo " + s + " end" },
		} {
			// The characters the encodings rewrite, one of each in every
			// 8 bytes, so that no 8-byte piece is left as it was.
			secret := []byte(randomSecret(r, 24+r.IntN(24)))
			for i := 3; i < len(secret); i += 6 {
				secret[i] = `"\<>&+/= ;`[r.IntN(10)]
			}
			sec := string(secret)
			encoded := e.enc(sec)
			piece := wrap(encoded)
			filler := strings.Repeat("x ", readBound)
			for off := 0; off <= readBound+len(piece); off++ {
				text := filler[:min(off, len(filler))] + piece + filler
				read, cut := text, false
				if len(read) > readBound {
					read, cut = read[:readBound], true
				}
				for _, out := range []string{Text(read, cut, sec), Bounded(read, printBound, cut, sec)} {
					for _, form := range []string{sec, encoded} {
						if p, bad := leaked(out, form); bad {
							t.Fatalf("%s, offset %d: %q of the secret %q (encoded %q) is in the output %q\n%s", e.name, off, p, sec, encoded, out, testseed.Replay(t, seed))
						}
					}
				}
			}
		}
	}
}
