package sidecar

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// recordTopics records raw, pg and es in orders and clicks, and lake in
// orders only: the pipeline writes lake orders alone.
func recordTopics(t *testing.T, p *pod) {
	t.Helper()
	var rows []string
	for _, d := range []struct {
		sink, topic string
		end         uint64
	}{{"raw", "orders", 10}, {"raw", "clicks", 500}, {"pg", "orders", 10}, {"pg", "clicks", 500},
		{"es", "orders", 10}, {"es", "clicks", 500}, {"lake", "orders", 10}} {
		rows = append(rows, fmt.Sprintf(`{"sink":%q,"topic":%q,"partition":0,"start":0,"end":%d}`, d.sink, d.topic, d.end))
	}
	if a := p.do(t, "POST", "/v1/records", "application/json", []byte("["+strings.Join(rows, ",")+"]")); a.code != 200 {
		t.Fatalf("record: %d %s", a.code, a.raw)
	}
	if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 {
		t.Fatalf("checkpoint: %d %s", a.code, a.raw)
	}
}

// gapNames are the gaps of an answer as sink/topic [start,end).
func gapNames(t *testing.T, a answer) []string {
	t.Helper()
	var out []string
	for _, g := range gapRows(t, a) {
		out = append(out, fmt.Sprintf("%s/%s [%d,%d)", g.Sink, g.Topic, g.Start, g.End))
	}
	return out
}

// TestTopicSinksOverTheAPI: sinks=pg,es,lake shows lake missing all of
// clicks, which it is never written; topic-sinks=orders=pg,es,lake names
// lake for orders only: no gap, on /v1/gaps and /v1/plan alike. A topic
// listed with a sink that has no rows of it shows that sink missing the
// topic; a request naming either parameter replaces the server's pair,
// one naming neither takes it; a topic given twice is refused.
func TestTopicSinksOverTheAPI(t *testing.T) {
	p := newPod(t, func(o *Options) {
		o.Sinks = []string{"pg", "es"}
		o.TopicSinks = map[string][]string{"orders": {"pg", "es", "lake"}, "clicks": {"warehouse"}}
	})
	recordTopics(t, p)
	check := func(query string, want ...string) {
		t.Helper()
		for _, path := range []string{"/v1/gaps", "/v1/plan"} {
			if got := gapNames(t, p.do(t, "GET", path+"?"+query, "", nil)); !slices.Equal(got, want) {
				t.Errorf("%s?%s: %q, want %q", path, query, got, want)
			}
		}
	}
	ts := func(v string) string { return "topic-sinks=" + url.QueryEscape(v) }
	check("sinks=pg,es,lake", "lake/clicks [0,500)")
	check("sinks=pg,es&" + ts("orders=pg,es,lake"))
	check(ts("orders=pg,es,lake")+"&"+ts("clicks=pg,es,warehouse"), "warehouse/clicks [0,500)")
	check("sinks=warehouse&"+ts("clicks="), "warehouse/orders [0,10)")
	check("", "warehouse/clicks [0,500)") // the server's pair
	a := p.do(t, "GET", "/v1/gaps?"+ts("orders=pg")+"&"+ts("orders=lake"), "", nil)
	if a.code != 400 || !strings.Contains(a.raw, `topic \"orders\" is given sinks twice`) {
		t.Errorf("a topic given twice: %d %s, want 400 naming it", a.code, a.raw)
	}
	if a := p.do(t, "GET", "/v1/plan?"+ts("orders"), "", nil); a.code != 400 || !strings.Contains(a.raw, "not TOPIC=SINK,SINK") {
		t.Errorf("no =: %d %s, want 400", a.code, a.raw)
	}
}

// TestHugeTopicSinksValueIsNotEchoed: a hostile topic-sinks= value of
// 60 KB is a 400 whose body quotes a bounded part of it, as sinks= is:
// the error does not echo the whole value back (nor into the log).
func TestHugeTopicSinksValueIsNotEchoed(t *testing.T) {
	p := newPod(t, nil)
	big := strings.Repeat("a", 60000)
	for _, v := range []string{"orders=" + big, big + "=lake", "orders=lake," + big, "orders=lake,l\x01" + big, "orders=lake,,", big} {
		for _, path := range []string{"/v1/gaps", "/v1/plan"} {
			a := p.do(t, "GET", path+"?topic-sinks="+url.QueryEscape(v), "", nil)
			if a.code != 400 || len(a.raw) > 4096 {
				t.Errorf("%s with a %d-byte topic-sinks=: %d, %d bytes of body, want 400 under 4096 bytes: %.300s", path, len(v), a.code, len(a.raw), a.raw)
			}
		}
	}
}
