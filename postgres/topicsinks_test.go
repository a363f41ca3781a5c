package postgres

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/recovery"
)

// The tier lists a plan's topics' sinks itself (recovery.SinkLister), so a
// plan of one partition reads only that partition.
var _ recovery.SinkLister = (*Tier)(nil)

// TestTopicSinksAndSelectedPlans appends random coverage, some sinks
// writing only some partitions, and checks TopicSinks against the model
// and every partition's plan against the whole plan's tasks of it.
func TestTopicSinksAndSelectedPlans(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 0))
	tier := openTier(t, freshSchema(t))
	want := map[string]map[string]bool{}
	for i := range 40 {
		c := durable.Checkpoint{Name: fmt.Sprintf("ck-%d", i), Writer: "pod"}
		for range 1 + rng.IntN(3) {
			d := coverage.Destination{Sink: []string{"raw", "raw", "lake", "search"}[rng.IntN(4)], Topic: []string{"a", "b"}[rng.IntN(2)], Partition: int32(rng.IntN(4))}
			start := uint64(rng.IntN(200))
			c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1 + uint64(rng.IntN(10))}}})
			if want[d.Topic] == nil {
				want[d.Topic] = map[string]bool{}
			}
			want[d.Topic][d.Sink] = true
		}
		if err := tier.Append(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, topics := range [][]string{nil, {"a"}, {"b", "absent"}} {
		got, err := tier.TopicSinks(ctx, topics)
		if err != nil {
			t.Fatal(err)
		}
		for topic, sinks := range want {
			if topics != nil && !slices.Contains(topics, topic) {
				continue
			}
			var w []string
			for s := range sinks {
				w = append(w, s)
			}
			slices.Sort(w)
			g := slices.Sorted(slices.Values(got[topic]))
			if !reflect.DeepEqual(g, w) {
				t.Errorf("TopicSinks(%q)[%s] = %v, want %v", topics, topic, g, w)
			}
		}
		if topics != nil && got["absent"] != nil {
			t.Errorf("TopicSinks of a topic without rows: %v", got["absent"])
		}
	}
	whole, err := recovery.Plan(ctx, tier, recovery.PlanOptions{MaxTasks: -1})
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"a", "b"} {
		for p := range int32(5) {
			sel := durable.Filter{Partitions: []coverage.TopicPartition{{Topic: topic, Partition: p}}}
			got, err := recovery.Plan(ctx, tier, recovery.PlanOptions{MaxTasks: -1, Select: sel})
			if err != nil {
				t.Fatal(err)
			}
			w := slices.DeleteFunc(slices.Clone(whole), func(task recovery.Task) bool { return !sel.Match(task.Destination) })
			if !slices.Equal(got, w) {
				t.Errorf("plan of %s/%d:\n got %v\nwant %v", topic, p, got, w)
			}
		}
	}
}
