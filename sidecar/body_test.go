package sidecar

import (
	"errors"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

// TestBodyReadFailures: a body that times out or breaks midway is 408
// naming the transport (rule timeout or body-read), never a JSON error on
// the entry being read then, and nothing is recorded or buffered.
func TestBodyReadFailures(t *testing.T) {
	p := newPod(t, nil)
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	reset := &net.OpError{Op: "read", Net: "tcp", Err: errors.New("connection reset by peer")}
	entry := `{"sink":"lake","topic":"orders","partition":0,"start":0,"end":10}`
	for _, c := range []struct {
		method, path, ct, prefix string
	}{
		{"POST", "/v1/records", "", "[" + entry + "," + entry + ",{\"sink\":\"la"},
		{"POST", "/v1/records", "application/x-ndjson", entry + "\n" + entry + "\n{\"sink\":\"la"},
		{"PUT", "/v1/positions/files", "", `{"partition":0,"cursor":"a`},
	} {
		for _, fail := range []struct {
			err  error
			rule string
		}{{timeout, "timeout"}, {reset, "body-read"}} {
			req := apiRequest(c.method, c.path, io.MultiReader(strings.NewReader(c.prefix), failingReader{fail.err}))
			if c.ct != "" {
				req.Header.Set("Content-Type", c.ct)
			}
			rec := httptest.NewRecorder()
			p.h.ServeHTTP(rec, req)
			body := rec.Body.String()
			if rec.Code != 408 || !strings.Contains(body, `"rule":"`+fail.rule+`"`) || strings.Contains(body, `"entry"`) {
				t.Errorf("%s %s %s, %v: %d %s; want 408 rule %s and no entry", c.method, c.path, c.ct, fail.err, rec.Code, body, fail.rule)
			}
		}
	}
	if st := localState(t, p.local); len(st) != 0 {
		t.Errorf("a body that failed recorded %v", st)
	}
	if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 || a.body["positions"] != float64(0) || a.body["joined"] != false {
		t.Errorf("a PUT that failed buffered a position: %d %s", a.code, a.raw)
	}
}

// TestOneSpellingEach: a signed partition (-0, +1) is refused in records,
// queries and positions alike; a query parameter given twice is 400, not
// the first silently; a body of null is 400, not {"recorded":0}.
func TestOneSpellingEach(t *testing.T) {
	p := newPod(t, nil)
	for _, c := range []struct {
		method, path, ct, body, rule string
	}{
		{"POST", "/v1/records", "", `[{"sink":"lake","topic":"orders","partition":-0,"start":0,"end":1}]`, "partition"},
		{"POST", "/v1/records", "application/x-ndjson", `{"sink":"lake","topic":"orders","partition":-0,"start":0,"end":1}`, "partition"},
		{"POST", "/v1/records", "", `null`, "type"},
		{"POST", "/v1/records", "", ` null `, "type"},
		{"GET", "/v1/gaps?partition=%2B1", "", "", "partition"},
		{"GET", "/v1/gaps?partition=-0", "", "", "partition"},
		{"GET", "/v1/positions/files?partition=%2B0", "", "", "partition"},
		{"GET", "/v1/gaps?sink=a&sink=b", "", "", "query"},
		{"GET", "/v1/gaps?partition=0&partition=1", "", "", "query"},
		{"GET", "/v1/positions/files?partition=0&partition=1", "", "", "query"},
		{"GET", "/v1/gaps?sink=%zz", "", "", "query"},
	} {
		a := p.do(t, c.method, c.path, c.ct, []byte(c.body))
		if a.code != 400 || a.body["rule"] != c.rule {
			t.Errorf("%s %s %s: %d %s; want 400 %s", c.method, c.path, c.body, a.code, a.raw, c.rule)
		}
	}
	if st := localState(t, p.local); len(st) != 0 {
		t.Errorf("refused bodies recorded %v", st)
	}
}
