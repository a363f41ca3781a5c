package client

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestAnEchoedTokenStaysOut: an address that is not the pod (a debug
// service echoing the request) answers with the Authorization header in
// its body; neither the error nor the retry log lines carry the token.
func TestAnEchoedTokenStaysOut(t *testing.T) {
	const token = "s3cr3t-t0ken-value"
	for _, c := range []struct {
		name   string
		status int
		json   bool
	}{{"plain 400", 400, false}, {"json 400", 400, true}, {"plain 503", 503, false}, {"json 503", 503, true}} {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				echo := "you sent Authorization: " + r.Header.Get("Authorization")
				w.WriteHeader(c.status)
				if c.json {
					fmt.Fprintf(w, `{"error":%q,"rule":%q}`, echo, r.Header.Get("Authorization"))
					return
				}
				_, _ = w.Write([]byte(echo))
			}))
			defer srv.Close()
			var logs bytes.Buffer
			cl, err := New(Options{Address: srv.URL, Token: token, MaxAttempts: 2, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			cl.minWait, cl.maxWait = 0, 0
			_, err = cl.Gaps(ctx, GapsQuery{})
			if err == nil {
				t.Fatal("no error")
			}
			if strings.Contains(err.Error(), token) || strings.Contains(logs.String(), token) {
				t.Fatalf("the token is in the error or the log:\nerror: %v\nlog: %s", err, logs.String())
			}
		})
	}
}
