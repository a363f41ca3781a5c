package sidecar

import (
	"slices"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// POST /v1/release checkpoints the partitions' pending ranges into the
// durable tier and drops their local state, of every sink; the local view
// (GET /v1/coverage) no longer lists them.
func TestReleaseRoute(t *testing.T) {
	p := newPod(t, nil)
	body := `[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":10},
	          {"sink":"lake","topic":"orders","partition":0,"start":0,"end":5},
	          {"sink":"raw","topic":"orders","partition":1,"start":0,"end":7}]`
	if a := p.do(t, "POST", "/v1/records", "", []byte(body)); a.code != 200 {
		t.Fatalf("records: %d %s", a.code, a.raw)
	}
	a := p.do(t, "POST", "/v1/release", "", []byte(`[{"topic":"orders","partition":0},{"topic":"orders","partition":0},{"topic":"never","partition":9}]`))
	if a.code != 200 || a.body["checkpoints"] != float64(1) || a.body["batches"] != float64(22) ||
		!strings.Contains(a.raw, `"released":[{"sink":"lake","topic":"orders","partition":0},{"sink":"raw","topic":"orders","partition":0}]`) ||
		!strings.Contains(a.raw, `"retained":[]`) {
		t.Fatalf("release: %d %s", a.code, a.raw)
	}
	all, err := p.table.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	raw0 := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 0}
	if all[raw0].String() != "{[0,10)}" || all[raw0.WithSink("lake")].String() != "{[0,5)}" {
		t.Fatalf("the durable tier after the release: %v", all)
	}
	dests, err := p.local.Destinations(ctx)
	if err != nil || !slices.Equal(dests, []coverage.Destination{{Sink: "raw", Topic: "orders", Partition: 1}}) {
		t.Fatalf("local destinations after the release: %v, %v", dests, err)
	}
	if c := p.do(t, "GET", "/v1/coverage", "", nil); c.code != 200 || strings.Contains(c.raw, `"partition": 0`) {
		t.Fatalf("GET /v1/coverage lists a released partition: %s", c.raw)
	}
	if a := p.do(t, "POST", "/v1/release", "", []byte(`[]`)); a.code != 200 || !strings.Contains(a.raw, `"released":[]`) {
		t.Fatalf("release of none: %d %s", a.code, a.raw)
	}
}

// A refused release body answers 400 (413, 415) naming the entry and the
// rule, and releases nothing.
func TestReleaseRouteBadInput(t *testing.T) {
	p := newPod(t, func(o *Options) { o.MaxBodyBytes = 4096 })
	if a := p.do(t, "POST", "/v1/records", "", []byte(`[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":10}]`)); a.code != 200 {
		t.Fatalf("records: %d %s", a.code, a.raw)
	}
	if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 {
		t.Fatalf("checkpoint: %d %s", a.code, a.raw)
	}
	for _, c := range []struct {
		body, ct string
		code     int
		rule     string
		entry    int // -1: none
	}{
		{`{"topic":"orders","partition":0}`, "", 400, "type", -1},
		{`null`, "", 400, "type", -1},
		{`[{"topic":"orders","partition":0}] []`, "", 400, "json", -1},
		{`[{"topic":"orders","partition":0}`, "", 400, "json", -1},
		{`[{"topic":"orders","partition":0},{"topic":"orders"}]`, "", 400, "missing-field", 1},
		{`[{"partition":0}]`, "", 400, "missing-field", 0},
		{`[{"topic":"orders","partition":-1}]`, "", 400, "partition", 0},
		{`[{"topic":"orders","partition":2147483648}]`, "", 400, "partition", 0},
		{`[{"topic":"orders","partition":1.0}]`, "", 400, "partition", 0},
		{`[{"topic":"orders","partition":"0"}]`, "", 400, "type", 0},
		{`[{"topic":7,"partition":0}]`, "", 400, "type", 0},
		{`[{"topic":"orders","partition":0,"sink":"raw"}]`, "", 400, "unknown-field", 0},
		{`[{"topic":"orders","Partition":0}]`, "", 400, "unknown-field", 0},
		{`[{"topic":"orders","topic":"other","partition":0}]`, "", 400, "duplicate-field", 0},
		{`[{"topic":"","partition":0}]`, "", 400, "invalid-destination", 0},
		{`[{"topic":"a\u0000b","partition":0}]`, "", 400, "invalid-destination", 0},
		{`[7]`, "", 400, "type", 0},
		{`[{"topic":"` + strings.Repeat("x", 5000) + `","partition":0}]`, "", 413, "body-too-large", -1},
		{`[{"topic":"orders","partition":0}]`, "text/plain", 415, "content-type", -1},
		{`[{"topic":"orders","partition":0}]`, "application/x-ndjson", 415, "content-type", -1},
	} {
		a := p.do(t, "POST", "/v1/release", c.ct, []byte(c.body))
		if a.code != c.code || (c.rule != "" && a.body["rule"] != c.rule) {
			t.Errorf("release %s (%s): %d %s; want %d rule %s", c.body, c.ct, a.code, a.raw, c.code, c.rule)
			continue
		}
		if entry, ok := a.body["entry"]; c.entry >= 0 && (!ok || entry != float64(c.entry)) || c.entry < 0 && ok {
			t.Errorf("release %s: entry %v, want %d", c.body, a.body["entry"], c.entry)
		}
		if c.code == 400 && !strings.Contains(a.raw, "nothing was released") {
			t.Errorf("release %s: %s does not say nothing was released", c.body, a.raw)
		}
	}
	if a := p.do(t, "GET", "/v1/release", "", nil); a.code != 405 || a.body["rule"] != "method" {
		t.Errorf("GET /v1/release: %d %s", a.code, a.raw)
	}
	if dests, _ := p.local.Destinations(ctx); len(dests) != 1 {
		t.Fatalf("refused releases dropped something: %v", dests)
	}
	if err := p.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if a := p.do(t, "POST", "/v1/release", "", []byte(`[{"topic":"orders","partition":0}]`)); a.code != 503 || a.body["rule"] != "shutting-down" {
		t.Fatalf("release after Shutdown: %d %s", a.code, a.raw)
	}
	if dests, _ := p.local.Destinations(ctx); len(dests) != 1 {
		t.Fatalf("a release after Shutdown dropped something: %v", dests)
	}
}
