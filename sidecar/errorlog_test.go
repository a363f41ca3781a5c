package sidecar

import (
	"bytes"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log's buffer written by the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestHandlerPanicIsLoggedRedacted: a handler's panic, which net/http
// recovers and logs with its value (here a driver's error quoting a DSN),
// reaches Options.Logger with the DSN's password redacted, never stderr
// as it is.
func TestHandlerPanicIsLoggedRedacted(t *testing.T) {
	const secret = "Pq7zPanicPassword"
	logs := new(lockedBuffer)
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
