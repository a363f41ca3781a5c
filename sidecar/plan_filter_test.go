package sidecar

import (
	"fmt"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/recovery"
)

// TestPlanFilterSeesPastOtherTopicsTasks: GET /v1/plan?topic=T is
// documented as the plan filtered by topic, but the plan is cut to
// max_tasks before it is filtered. A pipeline reported an over-reported
// extent of orders-a/0 (end 2,000,000,000, where raw holds nothing past 10):
// raw's unverifiable hole there fills the default 100,000 tasks, so the
// plan of orders-b, whose warehouse (a sink sorted after raw) lacks [5,10),
// answers [] (with only a truncation header) for as long as the pod runs:
// the warehouse's gap is invisible to a caller asking for its topic.
func TestPlanFilterSeesPastOtherTopicsTasks(t *testing.T) {
	p := newPod(t, nil)
	for _, r := range []struct {
		sink, topic string
		start, end  uint64
	}{{"raw", "orders-a", 0, 10}, {"raw", "orders-b", 0, 10}, {"warehouse", "orders-b", 0, 5}} {
		body := fmt.Sprintf(`[{"sink":%q,"topic":%q,"partition":0,"start":%d,"end":%d}]`, r.sink, r.topic, r.start, r.end)
		if a := p.do(t, "POST", "/v1/records", "application/json", []byte(body)); a.code != 200 {
			t.Fatalf("record: %d %s", a.code, a.raw)
		}
	}
	if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 {
		t.Fatalf("checkpoint: %d %s", a.code, a.raw)
	}
	want := recovery.Gap{Sink: "warehouse", Topic: "orders-b", Start: 5, End: 10, Kind: recovery.KindReplay}
	if rows := gapRows(t, p.do(t, "GET", "/v1/plan?topic=orders-b", "", nil)); !slices.Equal(rows, []recovery.Gap{want}) {
		t.Fatalf("plan of orders-b without extents: %v, want [%v]", rows, want)
	}
	if a := p.do(t, "PUT", "/v1/extents", "application/json", []byte(`[{"topic":"orders-a","partition":0,"end":2000000000}]`)); a.code != 200 {
		t.Fatalf("PUT /v1/extents: %d %s", a.code, a.raw)
	}
	a := p.do(t, "GET", "/v1/plan?topic=orders-b", "", nil)
	if rows := gapRows(t, a); !slices.Contains(rows, want) {
		t.Fatalf("plan of orders-b with an extent of orders-a: %v, want it to hold %v", rows, want)
	}
	// Even a plan of one task: filtered first, then cut.
	a = p.do(t, "GET", "/v1/plan?topic=orders-b&max_tasks=1", "", nil)
	if rows := gapRows(t, a); !slices.Equal(rows, []recovery.Gap{want}) {
		t.Fatalf("plan of orders-b, max_tasks=1, with an extent of orders-a: %v, want [%v]", rows, want)
	}
}
