package sidecar

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/recovery"
)

// A PUT answers a summary, never the book; DELETE forgets one partition, a
// topic's partitions, or everything, and a partition without its topic is
// refused.
func TestExtentsPutSummaryAndDelete(t *testing.T) {
	p := newPod(t, nil)
	body := `[{"topic":"a","partition":0,"end":5},{"topic":"a","partition":1,"end":5},{"topic":"b","partition":0,"end":5}]`
	for i, want := range []string{`{"extents":3,"changed":3}`, `{"extents":3,"changed":0}`} {
		if a := p.do(t, "PUT", "/v1/extents", "application/json", []byte(body)); a.code != 200 || a.raw != want+"\n" {
			t.Fatalf("PUT %d: %d %s, want %s", i, a.code, a.raw, want)
		}
	}
	for _, c := range []struct{ query, want, left string }{
		{"?topic=a&partition=1", `{"extents":2,"forgotten":1}`, `[{"topic":"a","partition":0,"start":0,"end":5},{"topic":"b","partition":0,"start":0,"end":5}]`},
		{"?topic=a", `{"extents":1,"forgotten":1}`, `[{"topic":"b","partition":0,"start":0,"end":5}]`},
		{"", `{"extents":0,"forgotten":1}`, `[]`},
	} {
		if a := p.do(t, "DELETE", "/v1/extents"+c.query, "application/json", nil); a.code != 200 || a.raw != c.want+"\n" {
			t.Fatalf("DELETE %s: %d %s, want %s", c.query, a.code, a.raw, c.want)
		}
		if a := p.do(t, "GET", "/v1/extents", "", nil); a.raw != c.left+"\n" {
			t.Fatalf("after DELETE %s: %s, want %s", c.query, a.raw, c.left)
		}
	}
	if a := p.do(t, "DELETE", "/v1/extents?partition=0", "application/json", nil); a.code != 400 || a.body["rule"] != "query" {
		t.Fatalf("DELETE ?partition=0: %d %s, want 400 query", a.code, a.raw)
	}
}

// The book's bytes bound refuses a report past it (400 too-many-extents),
// keeps nothing of it, and a DELETE makes room again.
func TestExtentBookBytesBoundRefuses(t *testing.T) {
	b := NewExtentBook(0)
	long := strings.Repeat("x", 1000)
	report := func(from, n int) error {
		es := make([]coverage.Extent, 0, n)
		for i := range n {
			es = append(es, coverage.Extent{Topic: fmt.Sprintf("%s%06d", long, from+i), End: 1})
		}
		return b.Report(es)
	}
	// 8,338 topics of 1,006 bytes fit in 8 MiB (8,388,028 bytes); one more
	// does not.
	if err := report(0, 8338); err != nil {
		t.Fatal(err)
	}
	if err := report(8338, 500); err == nil {
		t.Fatalf("a report past %d bytes of topic names was kept", MaxExtentBytes)
	}
	if n := len(b.Extents()); n != 8338 {
		t.Fatalf("the refused report kept something: %d partitions, want 8338", n)
	}
	p := newPod(t, func(o *Options) { o.Extents = b })
	one := fmt.Sprintf(`[{"topic":"%s%06d","partition":0,"end":1}]`, long, 9000)
	if a := p.do(t, "PUT", "/v1/extents", "application/json", []byte(one)); a.code != 400 || a.body["rule"] != "too-many-extents" {
		t.Fatalf("PUT past the bytes bound: %d %s, want 400 too-many-extents", a.code, a.raw)
	}
	if a := p.do(t, "DELETE", "/v1/extents", "application/json", nil); a.code != 200 {
		t.Fatalf("DELETE: %d %s", a.code, a.raw)
	}
	if a := p.do(t, "PUT", "/v1/extents", "application/json", []byte(one)); a.code != 200 {
		t.Fatalf("PUT after a DELETE: %d %s", a.code, a.raw)
	}
}

// The requests counter labels a route of several methods by the method it
// was called with; an unknown method keeps the route's name.
func TestRequestsLabelledByMethod(t *testing.T) {
	p := newPod(t, nil)
	for _, c := range []struct{ method, path, label string }{
		{"POST", "/v1/gaps", "POST /v1/gaps"},
		{"GET", "/v1/gaps", "GET /v1/gaps"},
		{"POST", "/v1/plan", "POST /v1/plan"},
		{"DELETE", "/v1/extents", "DELETE /v1/extents"},
		{"GET", "/v1/extents", "GET /v1/extents"},
	} {
		a := p.do(t, c.method, c.path, "application/json", []byte("[]"))
		var m dto.Metric
		if err := p.srv.counters.requests.WithLabelValues(c.label, fmt.Sprint(a.code)).Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetCounter().GetValue(); got != 1 {
			t.Errorf("requests{route=%q,code=%d} = %v after %s %s, want 1", c.label, a.code, got, c.method, c.path)
		}
	}
}

// Named sinks (Options.Sinks, or sinks= on the request) get their gaps in a
// topic they have no rows of; the sinks with rows are planned either way.
func TestNamedSinksReachATopicWithoutTheirRows(t *testing.T) {
	for _, c := range []struct {
		name, query string
		sinks       []string
		want        bool
	}{
		{"none named", "", nil, false},
		{"Options.Sinks", "", []string{"lake"}, true},
		{"sinks=", "?sinks=lake", nil, true},
		{"sinks= over Options.Sinks", "?sinks=warehouse", []string{"lake"}, false},
		// A name means its exact bytes: " lake" is another sink than lake.
		{"sinks= a name with a space", "?sinks=%20lake", nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPod(t, func(o *Options) { o.Sinks = c.sinks })
			for _, body := range []string{
				`[{"sink":"raw","topic":"payments","partition":0,"start":0,"end":20}]`,
				`[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":20}]`,
				`[{"sink":"lake","topic":"orders","partition":0,"start":0,"end":20}]`,
			} {
				if a := p.do(t, "POST", "/v1/records", "application/json", []byte(body)); a.code != 200 {
					t.Fatalf("record: %d %s", a.code, a.raw)
				}
			}
			if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 {
				t.Fatalf("checkpoint: %d %s", a.code, a.raw)
			}
			want := recovery.Gap{Sink: "lake", Topic: "payments", Start: 0, End: 20, Kind: recovery.KindReplay}
			for _, route := range []string{"/v1/gaps", "/v1/plan"} {
				if got := slices.Contains(gapRows(t, p.do(t, "GET", route+c.query, "", nil)), want); got != c.want {
					t.Errorf("%s%s with Options.Sinks %v: holds %v: %v, want %v", route, c.query, c.sinks, want, got, c.want)
				}
			}
		})
	}
	p := newPod(t, nil)
	if a := p.do(t, "GET", "/v1/plan?sinks=lake,,x", "", nil); a.code != 400 || a.body["rule"] != "query" {
		t.Fatalf("sinks=lake,,x: %d %s, want 400 query", a.code, a.raw)
	}
}
