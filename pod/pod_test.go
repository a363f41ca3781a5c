package pod_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/version"
	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/tier"
)

// TestRecordThenShutdown: a pod started in-process answers the record
// API, and a record answered 200 is in the durable tier after Run returns
// (the final checkpoint carries it), long before the checkpoint interval.
func TestRecordThenShutdown(t *testing.T) {
	state := t.TempDir()
	ts := tier.Settings{State: state, Writer: "test"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := pod.Start(ctx, pod.Options{Tier: ts, Addr: "127.0.0.1:0", MetricsAddr: "127.0.0.1:0", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	body := `[{"sink":"lake","topic":"orders","partition":0,"start":1,"end":5}]`
	resp, err := http.Post("http://"+p.Addr().String()+"/v1/records", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/records: %s", resp.Status)
	}
	// The metrics say which build runs (covmirror_build_info).
	bi := version.Get()
	series := `covmirror_build_info{commit="` + bi.Commit + `",date="` + bi.Date + `",goversion="` + bi.GoVersion + `",version="` + bi.Version + `"}`
	if v, ok := scrape(t, p)[series]; !ok || v != 1 {
		t.Errorf("/metrics has %s = %v (present: %v), want 1", series, v, ok)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after its context ended")
	}
	if err := p.Shutdown(); err != nil {
		t.Fatalf("a second Shutdown: %v", err)
	}
	table, err := tier.OpenTable(context.Background(), ts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := table.Coverage(context.Background(), durable.Filter{Topic: "orders"})
	if err != nil {
		t.Fatal(err)
	}
	d := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 0}
	if set := got[d]; set == nil || !set.ContainsRange(coverage.Range{Start: 1, End: 5}) {
		t.Fatalf("committed coverage %v, want lake/orders/0 [1,5)", got)
	}
}

// TestNotLoopbackNeedsToken: an address other hosts reach is refused
// without a token, and nothing stays open (the state directory's lock is
// released: a second Start succeeds).
func TestNotLoopbackNeedsToken(t *testing.T) {
	ts := tier.Settings{State: t.TempDir(), Writer: "test"}
	if _, err := pod.Start(context.Background(), pod.Options{Tier: ts, Addr: ":0"}); err == nil {
		t.Fatal("a wildcard address without a token was accepted")
	}
	p, err := pod.Start(context.Background(), pod.Options{Tier: ts, Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("after a refused start: %v", err)
	}
	if err := p.Shutdown(); err != nil {
		t.Fatal(err)
	}
}
