package pod_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/tier"
)

const (
	apiToken     = "record-api-token-0123456789abcdef"
	metricsToken = "metrics-only-token-0123456789abcd"
)

// call makes one request and returns its status and body.
func call(t *testing.T, method, url, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsTokenCannotRecord: a pod with a record API token and a
// metrics token of its own. The metrics token records nothing on either
// listener (401 on the API's, 405 on the metrics listener, which refuses
// every write whatever the token), the API's token does not read
// /metrics on the metrics listener, and the API's listener serves no
// /metrics. What the pod recorded is what the API's token recorded.
func TestMetricsTokenCannotRecord(t *testing.T) {
	ts := tier.Settings{State: t.TempDir(), Writer: "test"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := pod.Start(ctx, pod.Options{Tier: ts, Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Token: apiToken,
		MetricsToken: metricsToken, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	api, metrics := "http://"+p.Addr().String(), "http://"+p.MetricsAddr().String()
	rec := `[{"sink":"lake","topic":"orders","partition":0,"start":0,"end":100}]`

	for _, tok := range []string{"", metricsToken} {
		if code, _ := call(t, "POST", api+"/v1/records", tok, rec); code != http.StatusUnauthorized {
			t.Errorf("POST /v1/records on the API with token %t: %d, want 401", tok != "", code)
		}
	}
	for _, tok := range []string{"", metricsToken, apiToken} {
		for _, path := range []string{"/v1/records", "/v1/checkpoint", "/v1/release", "/metrics", "/readyz"} {
			if code, _ := call(t, "POST", metrics+path, tok, rec); code != http.StatusMethodNotAllowed {
				t.Errorf("POST %s on the metrics listener: %d, want 405", path, code)
			}
		}
	}
	if n := p.Mirror().Stats().Records; n != 0 {
		t.Fatalf("refused requests recorded %d ranges", n)
	}
	if code, body := call(t, "POST", api+"/v1/records", apiToken, rec); code != http.StatusOK {
		t.Fatalf("POST /v1/records with the API's token: %d %s", code, body)
	}
	if code, body := call(t, "POST", api+"/v1/checkpoint", apiToken, ""); code != http.StatusOK {
		t.Fatalf("POST /v1/checkpoint: %d %s", code, body)
	}
	if n := p.Mirror().Stats().Records; n != 1 {
		t.Fatalf("recorded %d ranges, want the API token's 1", n)
	}

	for tok, want := range map[string]int{"": 401, apiToken: 401, metricsToken: 200} {
		if code, _ := call(t, "GET", metrics+"/metrics", tok, ""); code != want {
			t.Errorf("GET /metrics on the metrics listener with token %q: %d, want %d", tok, code, want)
		}
	}
	if code, _ := call(t, "GET", api+"/metrics", apiToken, ""); code != http.StatusNotFound {
		t.Errorf("GET /metrics on the API without MetricsOnAPI: %d, want 404", code)
	}
	_, body := call(t, "GET", metrics+"/metrics", metricsToken, "")
	for _, series := range []string{"go_goroutines ", "process_cpu_seconds_total ", "covmirror_checkpoints_total 1",
		`covmirror_sidecar_request_duration_seconds_count{route="POST /v1/records"} 1`,
		`covmirror_checkpoint_commit_duration_seconds_count{tier="durable"} 1`,
		`covmirror_checkpoint_commit_duration_seconds_count{tier="local"} 1`} {
		if !strings.Contains(body, series) {
			t.Errorf("/metrics lacks %q", series)
		}
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := call(t, "GET", metrics+path, "", ""); code != 200 || body != "ok\n" {
			t.Errorf("GET %s: %d %q", path, code, body)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(metrics + "/healthz"); err == nil {
		t.Error("the metrics listener still answers after Run returned")
	}
}

// TestMetricsOptions: /metrics on the API's listener when asked, behind
// the API's token; a metrics token equal to the API's, or without a
// metrics listener, is refused.
func TestMetricsOptions(t *testing.T) {
	ts := tier.Settings{State: t.TempDir(), Writer: "test"}
	for name, o := range map[string]pod.Options{
		"same token": {Tier: ts, Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Token: apiToken, MetricsToken: apiToken},
		"no address": {Tier: ts, Addr: "127.0.0.1:0", MetricsToken: metricsToken},
	} {
		if p, err := pod.Start(context.Background(), o); err == nil {
			_ = p.Shutdown()
			t.Errorf("%s: started", name)
		}
	}
	p, err := pod.Start(context.Background(), pod.Options{Tier: ts, Addr: "127.0.0.1:0", Token: apiToken, MetricsOnAPI: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Shutdown()
	if p.MetricsAddr() != nil {
		t.Errorf("a metrics listener without MetricsAddr: %v", p.MetricsAddr())
	}
	api := "http://" + p.Addr().String()
	for tok, want := range map[string]int{apiToken: 200, metricsToken: 401, "": 401} {
		if code, _ := call(t, "GET", api+"/metrics", tok, ""); code != want {
			t.Errorf("GET /metrics on the API with MetricsOnAPI, token %q: %d, want %d", tok, code, want)
		}
	}
}
