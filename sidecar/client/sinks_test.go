package client

import (
	"errors"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// TestSinkWithCommaIsRefused: a sink name may hold a comma, but the API's
// sinks parameter separates names by commas, so Gaps and Plan asked for
// the sink "lake,eu" would be answered for the sinks "lake" and "eu" (a
// replay planned for another sink, and none for the one asked). The client
// refuses it before sending.
func TestSinkWithCommaIsRefused(t *testing.T) {
	p := startPod(t, nil, nil)
	c := p.client(t, "tcp", nil)
	must(t, c.Record(ctx, []coverage.Entry{entry("raw", "commas", 0, 0, 100)}))
	if _, err := c.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	q := GapsQuery{Filter: Filter{Topic: "commas"}, Sinks: []string{"lake,eu"}}
	gaps, err := c.Gaps(ctx, q)
	var ae *Error
	if !errors.Is(err, ErrRejected) || !errors.As(err, &ae) || ae.Status != 0 || ae.Rule != "query" {
		t.Fatalf("Gaps for the sink %q: %v %v: want it refused before sending", "lake,eu", gaps, err)
	}
	plan, err := c.Plan(ctx, PlanQuery{GapsQuery: q})
	if !errors.Is(err, ErrRejected) {
		t.Fatalf("Plan for the sink %q: %+v %v: want it refused before sending", "lake,eu", plan, err)
	}
}
