package client

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/sidecar"
)

// TestRecoveryLoop runs the recovery loop through the client over both
// transports: gaps and plan with their kinds, an extent reported, tasks
// recorded and checkpointed until the plan is empty, a plan cut at
// MaxTasks marked truncated.
func TestRecoveryLoop(t *testing.T) {
	p := startPod(t, nil, nil)
	for _, tr := range transports {
		c := p.client(t, tr, nil)
		topic := "loop-" + tr
		part := int32(0)
		must(t, c.Record(ctx, []coverage.Entry{entry("raw", topic, 0, 10, 100), entry("lake", topic, 0, 10, 40), entry("lake", topic, 0, 60, 100)}))
		if _, err := c.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		gaps, err := c.Gaps(ctx, GapsQuery{Filter: Filter{Sink: "lake", Topic: topic, Partition: &part}})
		if err != nil || !slices.Equal(gaps, []Gap{{Sink: "lake", Topic: topic, Start: 40, End: 60, Kind: KindReplay}}) {
			t.Fatalf("%s: gaps %v %v", tr, gaps, err)
		}
		// The source acked [0,100): raw's first stretch is a hole to verify.
		acked := []coverage.Extent{{Topic: topic, Partition: 0, Start: 0, End: 100}}
		all, err := c.Gaps(ctx, GapsQuery{Filter: Filter{Topic: topic}, Extents: acked})
		hole := Gap{Sink: "raw", Topic: topic, Start: 0, End: 10, Kind: KindVerifyReference}
		if err != nil || len(all) != 2 || !slices.Contains(all, hole) || !slices.Contains(all, gaps[0]) {
			t.Fatalf("%s: gaps over the extent %v %v", tr, all, err)
		}
		cut, err := c.Plan(ctx, PlanQuery{GapsQuery: GapsQuery{Filter: Filter{Topic: topic}, Extents: acked}, MaxTasks: 1})
		if err != nil || len(cut.Tasks) != 1 || !cut.Truncated {
			t.Fatalf("%s: a plan cut at one task: %+v %v", tr, cut, err)
		}
		if res, err := c.PutExtents(ctx, acked); err != nil || res.Changed != 1 {
			t.Fatalf("%s: put extents %+v %v", tr, res, err)
		}
		kept, err := c.Extents(ctx)
		if err != nil || !slices.Contains(kept, acked[0]) {
			t.Fatalf("%s: extents kept %v %v", tr, kept, err)
		}
		var kinds []Kind
		for range 5 {
			plan, err := c.Plan(ctx, PlanQuery{GapsQuery: GapsQuery{Filter: Filter{Topic: topic}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(plan.Tasks) == 0 {
				break
			}
			for _, task := range plan.Tasks {
				kinds = append(kinds, task.Kind)
				// Raw holds [0,100) of the topic: a verify-reference
				// task records what raw holds of it, a replay what the
				// sink then acked.
				must(t, c.Record(ctx, []coverage.Entry{{Destination: task.Destination(), Range: task.Range()}}))
			}
			if _, err := c.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// Lake's gap [40,60), raw's hole [0,10) to verify, then lake's
		// [0,10) once raw holds it.
		if slices.Sort(kinds); !slices.Equal(kinds, []Kind{KindReplay, KindReplay, KindVerifyReference}) {
			t.Fatalf("%s: the loop ran %v", tr, kinds)
		}
		committed, err := c.Committed(ctx, Filter{Topic: topic})
		if err != nil {
			t.Fatal(err)
		}
		want := map[coverage.Destination][]coverage.Range{
			{Sink: "raw", Topic: topic}:  {{Start: 0, End: 100}},
			{Sink: "lake", Topic: topic}: {{Start: 0, End: 100}},
		}
		sameState(t, tr+": committed after recovery", setsState(committed), want)
	}
}

// TestPositions: a stored source's position round-trips after a
// checkpoint; a broker-managed one is 409 and an undeclared one 404, typed
// with the server's rule; "." and ".." stay one path segment.
func TestPositions(t *testing.T) {
	p := startPod(t, nil, nil)
	for _, tr := range transports {
		c := p.client(t, tr, nil)
		part := int32(map[string]int{"tcp": 1, "socket": 2}[tr])
		if pos, err := c.Position(ctx, "files", part); err != nil || pos.Found {
			t.Fatalf("%s: before any: %+v %v", tr, pos, err)
		}
		must(t, c.Record(ctx, []coverage.Entry{entry("raw", "files", part, 0, 100)}))
		must(t, c.PutPosition(ctx, "files", part, "file-0099 ü", 100))
		if _, err := c.Checkpoint(ctx); err != nil {
			t.Fatal(err)
		}
		pos, err := c.Position(ctx, "files", part)
		if err != nil || pos != (Position{Found: true, Cursor: "file-0099 ü", RawEnd: 100}) {
			t.Fatalf("%s: position %+v %v", tr, pos, err)
		}
		for source, want := range map[string]struct {
			status int
			rule   string
		}{"orders-kafka": {409, "broker-managed"}, "nope/x": {404, "unknown-source"}, ".": {404, "unknown-source"}, "..": {404, "unknown-source"}} {
			err := c.PutPosition(ctx, source, 0, "c", 1)
			var ae *Error
			if !errors.As(err, &ae) || ae.Status != want.status || ae.Rule != want.rule || !errors.Is(err, ErrRejected) {
				t.Fatalf("%s: put %q: %v", tr, source, err)
			}
			if _, err := c.Position(ctx, source, 0); !errors.As(err, &ae) || ae.Status != want.status {
				t.Fatalf("%s: get %q: %v", tr, source, err)
			}
		}
		if err := c.PutPosition(ctx, "files", 0, "bin\xff", 1); !errors.Is(err, ErrRejected) || !strings.Contains(err.Error(), "invalid-utf8") {
			t.Fatalf("%s: a cursor JSON would change: %v", tr, err)
		}
	}
}

// TestBodyTooLargeIsRefused: a request past the server's body limit is 413
// (rule body-too-large), not retried, and nothing is recorded.
func TestBodyTooLargeIsRefused(t *testing.T) {
	p := startPod(t, nil, func(o *sidecar.Options) { o.MaxBodyBytes = 4096 })
	c := p.client(t, "socket", nil)
	big := make([]coverage.Entry, 200)
	for i := range big {
		big[i] = entry("lake", "orders", 0, uint64(2*i), uint64(2*i+1))
	}
	err := c.Record(ctx, big)
	var ae *Error
	if !errors.As(err, &ae) || ae.Status != http.StatusRequestEntityTooLarge || ae.Rule != "body-too-large" || !errors.Is(err, ErrRejected) {
		t.Fatalf("a body past 4 KiB: %v", err)
	}
	if got := p.state(t); len(got) != 0 {
		t.Fatalf("recorded %d destinations of a refused body", len(got))
	}
}

// TestClosed: every call after Close is ErrClosed, sending nothing.
func TestClosed(t *testing.T) {
	p := startPod(t, nil, nil)
	c := p.client(t, "tcp", nil)
	must(t, c.Close())
	must(t, c.Close())
	if err := c.Record(ctx, []coverage.Entry{entry("lake", "orders", 0, 0, 1)}); !errors.Is(err, ErrClosed) {
		t.Fatalf("record after Close: %v", err)
	}
	if _, err := c.Checkpoint(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("checkpoint after Close: %v", err)
	}
	if got := p.state(t); len(got) != 0 {
		t.Fatalf("recorded after Close: %v", got)
	}
}

// TestNotTheAPI: an address that answers but is not the record API (a
// redirect, an HTML page, a 200 without the count) is ErrBadAnswer, never
// nil, and not retried.
func TestNotTheAPI(t *testing.T) {
	var requests atomic.Int64
	p := startPod(t, func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			switch r.URL.Query().Get("kind") {
			case "redirect":
				http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
			case "html":
				_, _ = w.Write([]byte("<html>hello</html>"))
			default:
				_, _ = w.Write([]byte(`{"recorded":0}`))
			}
		})
	}, nil)
	c := p.client(t, "tcp", nil)
	err := c.Record(ctx, []coverage.Entry{entry("lake", "orders", 0, 0, 1)})
	if !errors.Is(err, ErrBadAnswer) || errors.Is(err, ErrRejected) {
		t.Fatalf("a 200 recording 0 of 1: %v", err)
	}
	for _, kind := range []string{"redirect", "html"} {
		if _, err := c.Gaps(ctx, GapsQuery{Filter: Filter{Sink: kind}}); err == nil {
			t.Fatalf("%s: no error", kind)
		}
	}
	if err := c.call(ctx, http.MethodGet, "/v1/gaps", map[string][]string{"kind": {"redirect"}}, nil, nil, nil); !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("a redirect: %v", err)
	}
	if err := c.call(ctx, http.MethodGet, "/v1/gaps", map[string][]string{"kind": {"html"}}, nil, &[]Gap{}, nil); !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("an HTML page: %v", err)
	}
	if n := requests.Load(); n != 5 {
		t.Fatalf("%d requests for 5 calls: a bad answer was retried", n)
	}
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
