package sidecar

import (
	"fmt"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/recovery"
)

// TestExtentOfATopicLostOnEverySinkReachesTheSinks: the defect extents fix
// is a stream's stretch lost on every destination. Here every record of
// payments/0 was lost, on raw and on the lake, while orders/0 is recorded
// on both (the lake is a sink of this pipeline). With payments/0's acked
// extent [0,20) reported, raw's [0,20) is a hole to verify; once raw is
// verified and re-recorded the lake's [0,20) must follow as replay work.
// The plan instead empties: with no lake row of payments the planner does
// not know the lake writes that topic, and neither /v1/plan nor /v1/gaps
// (nor the CLI) can name the sinks, so the lake's loss stays invisible.
func TestExtentOfATopicLostOnEverySinkReachesTheSinks(t *testing.T) {
	p := newPod(t, nil)
	record := func(sink, topic string, start, end uint64) {
		body := fmt.Sprintf(`[{"sink":%q,"topic":%q,"partition":0,"start":%d,"end":%d}]`, sink, topic, start, end)
		if a := p.do(t, "POST", "/v1/records", "application/json", []byte(body)); a.code != 200 {
			t.Fatalf("record: %d %s", a.code, a.raw)
		}
		if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 {
			t.Fatalf("checkpoint: %d %s", a.code, a.raw)
		}
	}
	record("raw", "orders", 0, 20)
	record("lake", "orders", 0, 20)
	if a := p.do(t, "PUT", "/v1/extents", "application/json", []byte(`[{"topic":"payments","partition":0,"end":20}]`)); a.code != 200 {
		t.Fatalf("PUT /v1/extents: %d %s", a.code, a.raw)
	}
	var seen []recovery.Gap
	for round := 0; round < 4; round++ {
		// The caller names the pipeline's sinks: no row tells the
		// planner the lake writes payments.
		tasks := gapRows(t, p.do(t, "GET", "/v1/plan?sinks=lake", "", nil))
		if len(tasks) == 0 {
			break
		}
		for _, task := range tasks {
			seen = append(seen, task)
			record(task.Sink, task.Topic, task.Start, task.End) // raw holds [0,20); a replay is acked
		}
	}
	want := recovery.Gap{Sink: "lake", Topic: "payments", Start: 0, End: 20, Kind: recovery.KindReplay}
	if !slices.Contains(seen, want) {
		t.Fatalf("the recovery loop over /v1/plan did %v, never the lake's replay %v: payments/0 is lost on the lake and nothing shows it", seen, want)
	}
}
