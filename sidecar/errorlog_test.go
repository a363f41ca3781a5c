package sidecar

import (
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/logtest"
)

// TestHandlerPanicIsLoggedRedacted: a handler's panic, which net/http
// recovers and logs with its value (here a driver's error quoting a DSN),
// reaches Options.Logger with the DSN's password redacted, never stderr
// as it is.
func TestHandlerPanicIsLoggedRedacted(t *testing.T) {
	const secret = "Pq7zPanicPassword"
	logs := new(logtest.Buffer)
	lp := newLivePod(t, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(logs, nil))
		o.Extra["GET /v1/map"] = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
			panic("dial postgres://ops:" + secret + "@db:5432/lake: refused")
		})
	})
	resp, err := http.Get(lp.base + "/v1/map")
	if err == nil {
		resp.Body.Close()
	}
	if got := logs.String(); !strings.Contains(got, "panic serving") {
		t.Fatalf("the panic is not in the logger's output: %q", got)
	}
	if got := logs.String(); strings.Contains(got, secret[:8]) {
		t.Errorf("the panic's password is logged: %s", got)
	}
}
