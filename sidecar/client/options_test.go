package client

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestOptionsValidate: both or neither of Address and Socket, an address
// that is not host:port or an http:// root, a token no header can carry
// and a negative MaxAttempts are ErrInvalidOptions, and no error quotes
// the token or an address's password.
func TestOptionsValidate(t *testing.T) {
	const secret = "s3cret-password-0123456789"
	type roundTripper struct{ http.RoundTripper }
	for _, o := range []Options{
		{},
		{Address: "127.0.0.1:9464", Socket: "/run/api.sock"},
		{Address: "ftp://127.0.0.1:9464"},
		{Address: "http://user:" + secret + "@127.0.0.1:9464"},
		{Address: "127.0.0.1:9464/v1/records"},
		{Address: "http://127.0.0.1:9464?x=1"},
		{Address: "http://:9464"},
		{Address: "localhost:port"},
		{Address: "127.0.0.1:9464", Token: secret + "\n"},
		{Address: "127.0.0.1:9464", Token: "two " + secret},
		{Address: "127.0.0.1:9464", MaxAttempts: -1},
		{Socket: "/run/api.sock", HTTPClient: &http.Client{Transport: roundTripper{}}},
	} {
		o.EnsureDefaults()
		err := o.Validate()
		if !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("%+v: %v", o, err)
		}
		if strings.Contains(err.Error(), secret) {
			t.Fatalf("the error quotes a secret: %v", err)
		}
		if _, err := New(o); !errors.Is(err, ErrInvalidOptions) {
			t.Fatalf("New(%+v): %v", o, err)
		}
	}
	for addr, base := range map[string]string{
		"127.0.0.1:9464":        "http://127.0.0.1:9464",
		"localhost:9464":        "http://localhost:9464",
		"http://[::1]:9464/":    "http://[::1]:9464",
		"https://covmirror.pod": "https://covmirror.pod",
		"http://10.0.0.7:9464":  "http://10.0.0.7:9464",
	} {
		c, err := New(Options{Address: addr})
		if err != nil || c.base != base {
			t.Fatalf("%s: %v %v, want %s", addr, c, err, base)
		}
	}
	o := Options{Socket: "/run/api.sock"}
	o.EnsureDefaults()
	if o.MaxAttempts != DefaultMaxAttempts || o.Logger == nil || o.HTTPClient != nil {
		t.Fatalf("defaults: %+v", o)
	}
}

// FuzzAnswerError: any error answer decodes into an *Error without a
// panic, with Entry and Recorded -1 or an index, and the token, placed at
// any offset of the answer and cut there or not, leaves no piece of 8
// bytes or more in the message.
func FuzzAnswerError(f *testing.F) {
	f.Add(400, []byte(`{"error":"entry 3: bad","rule":"partition","entry":3}`))
	f.Add(500, []byte(`{"error":"x","rule":"local-tier","entry":2,"recorded":2}`))
	f.Add(502, []byte(`<html>bad gateway</html>`))
	f.Add(401, []byte(``))
	f.Add(400, []byte(`{"error":null,"entry":-7}`))
	const token = "fuzz-Token_0123456789abcdef"
	f.Fuzz(func(t *testing.T, code int, body []byte) {
		e := answerError("POST /v1/records", code, body, false, token)
		if e.Entry < -1 || e.Recorded < -1 || e.Message == "" && len(body) == 0 && code >= 100 && code < 600 && http.StatusText(code) != "" {
			t.Fatalf("%d %q: %#v", code, body, e)
		}
		_ = e.Error()
		_ = errors.Is(e, ErrRejected)
		at := len(body) / 2
		echoed := string(body[:at]) + token + string(body[at:])
		for _, end := range []int{len(echoed), at + 8, at + len(token) - 1} {
			m := answerError("GET /v1/gaps", code, []byte(echoed[:end]), end < len(echoed), token).Error()
			if p, bad := leaked(m, token); bad {
				t.Fatalf("%d %q cut at %d: %q of the token is in %q", code, echoed, end, p, m)
			}
		}
	})
}
