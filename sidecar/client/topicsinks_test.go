package client

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// TestTopicSinks: lake is written orders only. Sinks naming it shows it
// missing all of clicks; TopicSinks naming it for orders alone shows no
// gap, in Gaps and Plan. A topic holding = or a sink holding a comma
// cannot be asked for, and is refused before sending.
func TestTopicSinks(t *testing.T) {
	p := startPod(t, nil, nil)
	c := p.client(t, "tcp", nil)
	var entries []coverage.Entry
	for _, sink := range []string{"raw", "pg", "lake"} {
		entries = append(entries, entry(sink, "orders", 0, 0, 10))
		if sink != "lake" {
			entries = append(entries, entry(sink, "clicks", 0, 0, 500))
		}
	}
	must(t, c.Record(ctx, entries))
	if _, err := c.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(q GapsQuery, want ...string) {
		t.Helper()
		gaps, err := c.Gaps(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := c.Plan(ctx, PlanQuery{GapsQuery: q})
		if err != nil {
			t.Fatal(err)
		}
		var got, planned []string
		for _, g := range gaps {
			got = append(got, fmt.Sprintf("%s/%s [%d,%d)", g.Sink, g.Topic, g.Start, g.End))
		}
		for _, g := range plan.Tasks {
			planned = append(planned, fmt.Sprintf("%s/%s [%d,%d)", g.Sink, g.Topic, g.Start, g.End))
		}
		if !slices.Equal(got, want) || !slices.Equal(planned, want) {
			t.Errorf("%+v: gaps %q, plan %q; want %q", q, got, planned, want)
		}
	}
	check(GapsQuery{Sinks: []string{"pg", "lake"}}, "lake/clicks [0,500)")
	check(GapsQuery{Sinks: []string{"pg"}, TopicSinks: map[string][]string{"orders": {"pg", "lake"}}})
	check(GapsQuery{TopicSinks: map[string][]string{"orders": {"lake"}, "clicks": {"warehouse"}}}, "warehouse/clicks [0,500)")
	for _, per := range []map[string][]string{{"a=b": {"pg"}}, {"orders": {"lake,eu"}}} {
		_, err := c.Gaps(ctx, GapsQuery{TopicSinks: per})
		var ae *Error
		if !errors.Is(err, ErrRejected) || !errors.As(err, &ae) || ae.Status != 0 || ae.Rule != "query" {
			t.Errorf("TopicSinks %q: %v, want it refused before sending", per, err)
		}
	}
}
