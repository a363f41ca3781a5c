package benthos_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/recovery"
	"github.com/covmirror/covmirror/tier"
)

// TestPlanInputTopicSinks: lake is written orders only. covmirror_plan
// with sinks naming lake replays all of clicks to it; with topic_sinks
// naming it for orders alone, nothing; warehouse, named for clicks, gets
// all of clicks. The same from a running pod, whose own topic_sinks apply
// when the input names none; a topic_sinks entry that is not a list, or a
// name no destination can have, is refused.
func TestPlanInputTopicSinks(t *testing.T) {
	state := t.TempDir()
	ctx := context.Background()
	ts := tier.Settings{State: state, Writer: "test"}
	tr, closer, err := tier.Open(ctx, ts, false)
	if err != nil {
		t.Fatal(err)
	}
	var rows []coverage.DestinationRanges
	for _, sink := range []string{"raw", "pg", "lake"} {
		rows = append(rows, coverage.DestinationRanges{Destination: coverage.Destination{Sink: sink, Topic: "orders"}, Ranges: []coverage.Range{{Start: 0, End: 10}}})
		if sink != "lake" {
			rows = append(rows, coverage.DestinationRanges{Destination: coverage.Destination{Sink: sink, Topic: "clicks"}, Ranges: []coverage.Range{{Start: 0, End: 500}}})
		}
	}
	if err := tr.Append(ctx, durable.Checkpoint{Name: "c1", Writer: "test", Ranges: rows}); err != nil {
		t.Fatal(err)
	}
	_ = closer.Close()
	names := func(gaps []recovery.Gap) []string {
		var out []string
		for _, g := range gaps {
			out = append(out, fmt.Sprintf("%s/%s [%d,%d)", g.Sink, g.Topic, g.Start, g.End))
		}
		return out
	}
	max := uint64(1000)
	for _, c := range []struct {
		in   obj
		want []string
	}{
		{obj{"sinks": []string{"pg", "lake"}}, []string{"lake/clicks [0,500)"}},
		{obj{"sinks": []string{"pg"}, "topic_sinks": obj{"orders": []string{"pg", "lake"}}}, nil},
		{obj{"topic_sinks": obj{"orders": []string{"lake"}, "clicks": []string{"warehouse"}}}, []string{"warehouse/clicks [0,500)"}},
	} {
		c.in["pod"], c.in["max_batches"], c.in["replay_batch_max"] = obj{"state": state}, max, max
		if got := names(planMessages(t, c.in)); !slices.Equal(got, c.want) {
			t.Errorf("%v: emitted %q, want %q", c.in, got, c.want)
		}
	}
	p, err := pod.Start(ctx, pod.Options{Tier: ts, Addr: "127.0.0.1:0", Interval: time.Hour, ReplicateEvery: pod.Never,
		Sinks: []string{"pg", "lake"}, TopicSinks: map[string][]string{"clicks": {"pg", "warehouse"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	sidecar := obj{"address": p.Addr().String()}
	if got, want := names(planMessages(t, obj{"sidecar": sidecar, "max_batches": max, "replay_batch_max": max})), []string{"warehouse/clicks [0,500)"}; !slices.Equal(got, want) {
		t.Errorf("from the pod, its topic sinks: emitted %q, want %q", got, want)
	}
	in := obj{"sidecar": sidecar, "max_batches": max, "replay_batch_max": max, "topic_sinks": obj{"orders": []string{"lake"}}}
	if got := names(planMessages(t, in)); len(got) != 0 {
		t.Errorf("from the pod, the input's topic sinks: emitted %q, want none", got)
	}
	for _, bad := range []obj{{"orders": "pg,lake"}, {"orders": []string{"a\nb"}}} {
		y, _ := yaml.Marshal(obj{"input": obj{"covmirror_plan": obj{"pod": obj{"state": state}, "topic_sinks": bad}}, "output": obj{"drop": obj{}}})
		if err := runErr(t, string(y)); err == nil || !strings.Contains(err.Error(), "topic_sinks") {
			t.Errorf("topic_sinks %v: %v, want it refused", bad, err)
		}
	}
}
