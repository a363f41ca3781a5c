package local

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

func TestHandlerServesDiagnosticsJSON(t *testing.T) {
	s := openTemp(t, Options{})
	raw := coverage.Destination{Sink: coverage.RawSink, Topic: "orders"}
	record(t, s, raw, 1, 6)
	for _, b := range []uint64{1, 2, 4, 5} {
		record(t, s, raw.WithSink("lake"), b, b+1)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET: %s %s", resp.Status, resp.Header.Get("Content-Type"))
	}
	var diag Diagnostics
	if err := json.NewDecoder(resp.Body).Decode(&diag); err != nil {
		t.Fatal(err)
	}
	lake := diag.Destinations[0]
	if lake.Destination.Sink != "lake" || len(lake.Gaps) != 1 || lake.Gaps[0] != (coverage.Range{Start: 3, End: 4}) ||
		lake.PendingBatches != 4 || lake.OldestPending == nil || diag.PendingBatches != 9 {
		t.Fatalf("diagnostics over HTTP: %+v", diag)
	}

	post, err := http.Post(srv.URL, "text/plain", strings.NewReader(""))
	if err != nil {
		t.Fatal(err)
	}
	post.Body.Close()
	if post.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST: %s", post.Status)
	}

	_ = s.Close()
	closed, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	closed.Body.Close()
	if closed.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET after close: %s", closed.Status)
	}
}
