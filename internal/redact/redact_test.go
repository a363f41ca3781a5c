package redact

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/testseed"
)

// leaked reports the first piece of secret found in out: the secret whole
// or any prefix of 8 or more bytes of it.
func leaked(out, secret string) (string, bool) {
	for n := len(secret); n >= 8 && n <= len(secret); n-- {
		if strings.Contains(out, secret[:n]) {
			return secret[:n], true
		}
	}
	return "", false
}

// randomSecret is a token of visible ASCII, as a bearer token or a
// password is.
func randomSecret(r *rand.Rand, n int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/%!#$"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.IntN(len(alphabet))]
	}
	return string(b)
}

// TestBoundedNeverLeaks: a known secret, or an unknown one in a bearer
// header, an Authorization header, a URL's user information or a password=
// value, placed at every offset of a text that is then cut by a read bound
// and by Bounded's own bound, never shows, whole or by an 8-byte prefix.
func TestBoundedNeverLeaks(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	const readBound, printBound = 300, 200
	for _, shape := range []struct {
		name  string
		known bool
		wrap  func(s string) string
	}{
		{"known secret", true, func(s string) string { return s }},
		{"echoed header", true, func(s string) string { return "Authorization: Bearer " + s + "\r\n" }},
		{"unknown bearer", false, func(s string) string { return "Authorization: Bearer " + s + "\r\n" }},
		{"unknown bearer in prose", false, func(s string) string { return "sent bearer " + s + " to" }},
		{"url password", false, func(s string) string { return "postgres://user:" + s + "@db:5432/x " }},
		{"password key", false, func(s string) string { return `"password": "` + s + `"` }},
		{"catalog key", false, func(s string) string { return "s3.secret-access-key=" + s + "&" }},
		// A ' is a valid character of a URL's user information (pgx takes
		// it): the password goes on past it.
		{"url password with a quote", false, func(s string) string { return "postgres://user:" + s + "'x@db:5432/x " }},
		{"url password after a quote", false, func(s string) string { return "postgres://user:x'" + s + "@db:5432/x " }},
		// Keys that end in "key" after a word that names a credential.
		{"secret-key", false, func(s string) string { return "s3.secret-key=" + s + "&" }},
		{"secret_key", false, func(s string) string { return "aws_secret_key: " + s }},
		{"private key", false, func(s string) string { return `"private-key": "` + s + `"` }},
		{"signature", false, func(s string) string { return "?X-Amz-Signature=" + s + "&" }},
	} {
		secret := randomSecret(r, 16+r.IntN(48))
		if shape.name == "url password" {
			secret += "@a/b#c%" // a password net/url refuses, or reads as a path
		}
		filler := randomSecret(r, 2*readBound)
		filler = strings.NewReplacer("/", " ", "%", " ", "-", " ", "_", " ").Replace(filler)
		piece := shape.wrap(secret)
		var secrets []string
		if shape.known {
			secrets = []string{secret}
		}
		for off := 0; off <= readBound+len(piece); off++ {
			text := filler[:min(off, len(filler))] + " " + piece + " " + filler
			read, cut := text, false
			if len(read) > readBound {
				read, cut = read[:readBound], true
			}
			for _, out := range []string{Text(read, cut, secrets...), Bounded(read, printBound, cut, secrets...)} {
				if p, bad := leaked(out, secret); bad {
					t.Fatalf("%s at offset %d: %q of the secret is in the output %q\n%s", shape.name, off, p, out, testseed.Replay(t, seed))
				}
			}
		}
	}
}

// TestTextKeepsOrdinaryText: what is no credential stays as it is.
func TestTextKeepsOrdinaryText(t *testing.T) {
	for _, s := range []string{
		`{"error":"unknown source","rule":"unknown-source"}`,
		"partition 3 of topic \"orders \" has gaps",
		"GET http://127.0.0.1:9464/v1/gaps?topic=orders",
	} {
		if got := Text(s, false); got != s {
			t.Errorf("Text(%q) = %q: nothing in it is a credential", s, got)
		}
	}
}

// TestURLNeverEchoesAnUnparsableURL: url.Parse's error quotes the URL
// whole; URL names at most its scheme and host, and never its user
// information, query or fragment.
func TestURLNeverEchoesAnUnparsableURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://u:pa%zz@host:1/x", "(an unparsable URL)"},
		{"http://host:1/%zz", "(an unparsable URL at http://host:1)"},
		{"http://u:p@host:1/x?token=abc#frag", "http://host:1/x"},
		{"http://u:a/b@host/x", "(an unparsable URL)"},
		{"http://u:/secret-pw@127.0.0.1:1/x", "(an unparsable URL)"},
		{"http://host:1/x?mail=a@b", "(an unparsable URL)"},
		// Shown to be corrected: nothing where a credential goes.
		{"s3://", "s3://"},
		{"seaweed:8333", "seaweed:8333"},
		{"seaweed:8333/x?key=s3cr3t", "(an unparsable URL)"},
		{"user:pw@seaweed:8333", "(an unparsable URL)"},
	} {
		if got := URL(c.in); got != c.want {
			t.Errorf("URL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestStatusQuotesControlCharacters: a server's status text prints with
// its control characters escaped.
func TestStatusQuotesControlCharacters(t *testing.T) {
	got := Status("200 OK\r\nX-Forged: 1\x1b[2J")
	if strings.ContainsAny(got, "\r\n\x1b") {
		t.Errorf("Status = %q: control characters are printed raw", got)
	}
}
