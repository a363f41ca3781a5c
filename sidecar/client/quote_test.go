package client

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
)

// hostileText is what a server that is not the pod may answer with: a
// line break forging a log line, a terminal's escape, a C1 control and a
// right-to-left override.
const hostileText = "refused\nlevel=ERROR msg=\"forged line\" \x1b[2J\u009b31m\u202egnp.exe"

// unquoted is the first character of s a terminal or a log reader acts on
// (a control character, a format character such as a bidi override), or
// -1 when there is none.
func unquoted(s string) rune {
	for _, c := range s {
		if c != ' ' && !unicode.IsPrint(c) {
			return c
		}
	}
	return -1
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestErrorQuotesTheServersText: an error answer's message and rule,
// whether the API's JSON or a body that is not, are printed quoted, so
// that no control character a server sends reaches a terminal or a log
// line as itself; the fields keep the text as sent.
func TestErrorQuotesTheServersText(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int
		body   string
	}{
		{"json 400", 400, jsonText(map[string]any{"error": hostileText, "rule": "rule\n" + hostileText, "entry": 0})},
		{"plain 400", 400, hostileText},
		{"json 503", 503, jsonText(map[string]any{"error": hostileText, "rule": "x\x1b[2J"})},
		{"plain 200", 200, hostileText},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			defer srv.Close()
			var logs logBuffer
			cl, err := New(Options{Address: srv.URL, MaxAttempts: 2, Logger: logs.logger()})
			if err != nil {
				t.Fatal(err)
			}
			cl.minWait, cl.maxWait = 0, 0
			_, err = cl.Gaps(ctx, GapsQuery{})
			var ae *Error
			if !errors.As(err, &ae) {
				t.Fatalf("%v: not an *Error", err)
			}
			if ch := unquoted(err.Error()); ch >= 0 {
				t.Errorf("the error prints %q as itself:\n%s", ch, err)
			}
			if strings.HasPrefix(c.name, "json") && ae.Message != hostileText {
				t.Errorf("Message %q; want the server's text as sent, %q", ae.Message, hostileText)
			}
		})
	}
}
