package sidecar

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/testseed"
)

const (
	apiToken     = "record-api-token-0123456789abcdef"
	metricsToken = "metrics-only-token-0123456789abcd"
)

// readOnly is a metrics listener's handler whose /metrics answers
// "metrics" and whose readiness fails with reasons while *failing holds.
func readOnly(t *testing.T, token string, reasons *[]string) http.Handler {
	t.Helper()
	s, err := NewReadOnly(ReadOnlyOptions{
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("metrics\n")) }),
		Ready:   func(context.Context) []string { return *reasons },
		Token:   token,
	})
	if err != nil {
		t.Fatal(err)
	}
	return s.Handler()
}

func do(h http.Handler, method, path, token string, header ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "http://127.0.0.1:9091"+path, strings.NewReader(`[{"sink":"lake","topic":"t","partition":0,"start":0,"end":9}]`))
	r.Header.Set("Content-Type", "application/json")
	if token != "" {
		r.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			r.Host = header[i+1]
			continue
		}
		r.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

// TestReadOnlyRefusesEveryWrite: whatever method but GET and HEAD, path
// (the record API's among them) and token a request brings, the metrics
// listener answers 405 with Allow: GET, HEAD. Randomized over a seed.
func TestReadOnlyRefusesEveryWrite(t *testing.T) {
	seed := testseed.Seed(t)
	rnd := rand.New(rand.NewPCG(seed, 0))
	var reasons []string
	h := readOnly(t, metricsToken, &reasons)
	methods := []string{"POST", "PUT", "DELETE", "PATCH", "OPTIONS", "TRACE", "RECORD", "post"}
	paths := []string{"/v1/records", "/v1/checkpoint", "/v1/release", "/v1/plan", "/v1/gaps", "/v1/extents", "/v1/positions/files",
		"/metrics", "/healthz", "/readyz", "/", "/debug/coverage", "/metrics/", "/v1/records?x=1"}
	tokens := []string{"", apiToken, metricsToken}
	for range 500 {
		m, p, tok := methods[rnd.IntN(len(methods))], paths[rnd.IntN(len(paths))], tokens[rnd.IntN(len(tokens))]
		rec := do(h, m, p, tok)
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Fatalf("%s %s with token %t: %d (Allow %q), want 405 Allow GET, HEAD", m, p, tok != "", rec.Code, rec.Header().Get("Allow"))
		}
	}
	for _, p := range []string{"/v1/records", "/v1/gaps", "/", "/debug/coverage", "/metrics/"} {
		if rec := do(h, "GET", p, metricsToken); rec.Code != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404: the listener serves three paths", p, rec.Code)
		}
	}
}

// TestReadOnlyTokens: /metrics takes the metrics token alone (the record
// API's is refused, as is none); /healthz and /readyz need no token.
func TestReadOnlyTokens(t *testing.T) {
	var reasons []string
	h := readOnly(t, metricsToken, &reasons)
	for tok, want := range map[string]int{"": 401, apiToken: 401, metricsToken: 200, metricsToken + "x": 401} {
		if rec := do(h, "GET", "/metrics", tok); rec.Code != want {
			t.Errorf("GET /metrics with token %d chars: %d, want %d", len(tok), rec.Code, want)
		}
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if rec := do(h, "GET", p, ""); rec.Code != 200 || rec.Body.String() != "ok\n" {
			t.Errorf("GET %s without a token: %d %q", p, rec.Code, rec.Body)
		}
		if rec := do(h, "HEAD", p, ""); rec.Code != 200 {
			t.Errorf("HEAD %s: %d", p, rec.Code)
		}
	}
	// With a token /metrics takes any Host (a Service's name); the probes
	// take the names a page cannot rebind, as without one.
	if rec := do(h, "GET", "/metrics", metricsToken, "Host", "covmirror.monitoring.svc"); rec.Code != 200 {
		t.Errorf("/metrics with the token by a Service name: %d", rec.Code)
	}
	if rec := do(h, "GET", "/readyz", "", "Host", "rebound.example"); rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("/readyz by a name: %d, want 421", rec.Code)
	}
	if rec := do(h, "GET", "/metrics", metricsToken, "Origin", "http://evil.example"); rec.Code != http.StatusForbidden {
		t.Errorf("/metrics from a page of another origin: %d, want 403", rec.Code)
	}
	open := readOnly(t, "", &reasons)
	if rec := do(open, "GET", "/metrics", ""); rec.Code != 200 {
		t.Errorf("/metrics without a token configured: %d", rec.Code)
	}
	if rec := do(open, "GET", "/metrics", "", "Host", "rebound.example"); rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("/metrics without a token, by a name: %d, want 421", rec.Code)
	}
	if _, err := NewReadOnly(ReadOnlyOptions{Metrics: http.NotFoundHandler(), Token: "short"}); err == nil {
		t.Error("a short metrics token was taken")
	}
}

// TestReadyzNamesEachReason: a failing readiness is 503 with each reason
// on a line of its own, or in JSON when Accept asks; liveness fails only
// on Live's error.
func TestReadyzNamesEachReason(t *testing.T) {
	reasons := []string{"durable-tier: down", "checkpoint-age: old"}
	h := readOnly(t, "", &reasons)
	rec := do(h, "GET", "/readyz", "")
	if rec.Code != 503 || rec.Body.String() != "durable-tier: down\ncheckpoint-age: old\n" || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("failing /readyz: %d %q %q", rec.Code, rec.Body, rec.Header().Get("Content-Type"))
	}
	rec = do(h, "GET", "/readyz", "", "Accept", "text/html, application/json;q=0.9")
	var got probeAnswer
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 503 || got.Status != "failing" || len(got.Reasons) != 2 {
		t.Fatalf("failing /readyz as JSON: %d %s (%v)", rec.Code, rec.Body, err)
	}
	reasons = nil
	if rec := do(h, "GET", "/readyz", "", "Accept", "application/json"); rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != `{"status":"ok","reasons":[]}` {
		t.Fatalf("ready /readyz as JSON: %d %s", rec.Code, rec.Body)
	}
	s, err := NewReadOnly(ReadOnlyOptions{Metrics: http.NotFoundHandler(), Live: func() error { return errors.New("local store failed") }})
	if err != nil {
		t.Fatal(err)
	}
	if rec := do(s.Handler(), "GET", "/healthz", ""); rec.Code != 503 || rec.Body.String() != "local-tier: local store failed\n" {
		t.Fatalf("/healthz of a failed store: %d %q", rec.Code, rec.Body)
	}
}

// TestProbesRedactTheirReasons: a failing reason quotes a tier's error
// (a driver's, which may hold a DSN with its password, or a server's echo
// of a token): /healthz and /readyz, plain and JSON, show it redacted.
func TestProbesRedactTheirReasons(t *testing.T) {
	const secret = "Rz4kProbePassword"
	failing := "dial postgres://ops:" + secret + "@db:5432/lake: refused; Authorization: Bearer " + secret
	s, err := NewReadOnly(ReadOnlyOptions{Metrics: http.NotFoundHandler(),
		Live:  func() error { return errors.New(failing) },
		Ready: func(context.Context) []string { return []string{"durable-tier: " + failing} }})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		for _, accept := range []string{"", "application/json"} {
			rec := do(s.Handler(), "GET", path, "", "Accept", accept)
			if rec.Code != 503 || !strings.Contains(rec.Body.String(), "refused") {
				t.Fatalf("%s (Accept %q): %d %q: not the failing reason", path, accept, rec.Code, rec.Body)
			}
			if strings.Contains(rec.Body.String(), secret[:8]) {
				t.Errorf("%s (Accept %q) shows the password: %s", path, accept, rec.Body)
			}
		}
	}
}
