package client

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/sidecar"
)

// TestRecordLands records over TCP with the token and over the socket:
// the local tier holds exactly the union of what was recorded, and after a
// checkpoint through the client the committed coverage read back through
// it is the same.
func TestRecordLands(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 1))
	p := startPod(t, nil, nil)
	model := newModel()
	for _, tr := range transports {
		c := p.client(t, tr, nil)
		for range 5 {
			batch := randomEntries(r, 1+r.IntN(200))
			if err := c.Record(ctx, batch); err != nil {
				t.Fatalf("%s: %v", tr, err)
			}
			model.add(t, batch)
		}
		if err := c.Record(ctx, nil); err != nil {
			t.Fatalf("%s: no entries: %v", tr, err)
		}
		sameState(t, tr+": local tier", p.state(t), model.state())
	}
	c := p.client(t, "tcp", nil)
	cp, err := c.Checkpoint(ctx)
	if err != nil || cp.Checkpoints != 1 || cp.Destinations != len(model.state()) {
		t.Fatalf("checkpoint: %+v %v", cp, err)
	}
	committed, err := c.Committed(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "committed", setsState(committed), model.state())
}

// TestBadEntryIsTypedAndRecordsNothing puts one invalid entry, of each
// rule the server applies to a well-typed entry, at a random index of a
// good batch: an *Error with status 400, the rule and the index, refused
// (never retried), and nothing of the batch recorded.
func TestBadEntryIsTypedAndRecordsNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 2))
	p := startPod(t, nil, nil)
	var logs logBuffer
	for _, tr := range transports {
		c := p.client(t, tr, func(o *Options) { o.Logger = logs.logger() })
		for _, bad := range badEntries {
			batch := randomEntries(r, 50)
			at := r.IntN(len(batch) + 1)
			batch = append(batch[:at], append([]coverage.Entry{bad.e}, batch[at:]...)...)
			err := c.Record(ctx, batch)
			var ae *Error
			if !errors.As(err, &ae) || ae.Rule != bad.rule || ae.Entry != at || ae.Status != bad.status || !errors.Is(err, ErrRejected) || errors.Is(err, ErrUnavailable) {
				t.Fatalf("%s: %s at %d: %#v (%v)", tr, bad.rule, at, ae, err)
			}
			if !strings.Contains(err.Error(), `rule "`+bad.rule+`"`) || ae.Message == "" {
				t.Fatalf("%s: the error does not say its rule and message: %v", tr, err)
			}
		}
	}
	if got := p.state(t); len(got) != 0 {
		t.Fatalf("refused batches recorded %v", got)
	}
	if strings.Contains(logs.String(), "retrying") {
		t.Fatalf("a refusal was retried:\n%s", logs.String())
	}
}

// badEntries are invalid entries and the rule each breaks; status 0: the
// client refuses it before sending (JSON would change its bytes).
var badEntries = []struct {
	e      coverage.Entry
	rule   string
	status int
}{
	{entry("lake", "orders", -1, 0, 1), "partition", 400},
	{entry("lake", "orders", 0, 5, 5), "invalid-range", 400},
	{entry("lake", "orders", 0, 9, 3), "invalid-range", 400},
	{entry("", "orders", 0, 0, 1), "invalid-destination", 400},
	{entry("lake", "", 0, 0, 1), "invalid-destination", 400},
	{entry("la\nke", "orders", 0, 0, 1), "invalid-destination", 0}, // coverage.ValidName, checked before sending
	{entry("lake", "t\nforged/orders/0 [0,1) claimed but absent: 1 batches", 0, 0, 1), "invalid-destination", 0},
	{entry("lake", "ord\u009b2J", 0, 0, 1), "invalid-destination", 0},
	{entry("lake", "orders", 0, 0, coverage.MaxBatchEnd+1), "max-batch-end", 400},
	{entry("lake\xff", "orders", 0, 0, 1), "invalid-utf8", 0},
	{entry("lake", "ord\xc3ers", 0, 0, 1), "invalid-utf8", 0},
}

func randomEntries(r *rand.Rand, n int) []coverage.Entry {
	out := make([]coverage.Entry, n)
	for i := range out {
		start := r.Uint64N(10_000)
		out[i] = entry([]string{"raw", "lake", "search"}[r.IntN(3)], []string{"orders", "clicks"}[r.IntN(2)], int32(r.IntN(4)), start, start+1+r.Uint64N(50))
	}
	return out
}

// TestWrongTokenIsUnauthorized: a wrong token and no token are
// ErrUnauthorized with the server's rule, never retried, and the token
// sent is in no error and no log line.
func TestWrongTokenIsUnauthorized(t *testing.T) {
	p := startPod(t, nil, nil)
	const wrong = "not-the-token-but-long-enough"
	for _, token := range []string{wrong, ""} {
		var logs logBuffer
		c := p.client(t, "tcp", func(o *Options) { o.Token, o.Logger = token, logs.logger() })
		err := c.Record(ctx, []coverage.Entry{entry("lake", "orders", 0, 0, 10)})
		var ae *Error
		if !errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrRejected) || !errors.As(err, &ae) || ae.Status != 401 || ae.Rule != "token" {
			t.Fatalf("token %q: %v", token, err)
		}
		if _, err := c.Gaps(ctx, GapsQuery{}); !errors.Is(err, ErrUnauthorized) {
			t.Fatalf("gaps with token %q: %v", token, err)
		}
		if strings.Contains(logs.String(), "retrying") {
			t.Fatalf("a 401 was retried:\n%s", logs.String())
		}
		for _, s := range []string{err.Error(), logs.String()} {
			if strings.Contains(s, wrong) || strings.Contains(s, testToken) {
				t.Fatalf("a token shows: %s", s)
			}
		}
	}
	if got := p.state(t); len(got) != 0 {
		t.Fatalf("unauthorized records landed: %v", got)
	}
}

// faultKinds are what the server does to a request it fails.
var faultKinds = []string{"503", "reset", "recorded-then-reset", "500-local-tier", "429"}

// TestRetriesFaults: a server that fails the first N requests (503 as at
// shutdown, a connection reset before the request is served, a reset after
// it was recorded and before the answer, a 500 of the local tier, a 429)
// is retried until it answers; the coverage is exactly the union of what
// was recorded, and each fault costs one request.
func TestRetriesFaults(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 3))
	var requests, faulted atomic.Int64
	var planMu sync.Mutex
	var plan []string // the faults of the current call, by request
	setPlan := func(faults []string) {
		planMu.Lock()
		defer planMu.Unlock()
		plan = faults
		requests.Store(0)
	}
	faultOf := func(n int) string {
		planMu.Lock()
		defer planMu.Unlock()
		if n < len(plan) {
			return plan[n]
		}
		return ""
	}
	p := startPod(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			fault := faultOf(int(requests.Add(1) - 1))
			if fault == "" {
				h.ServeHTTP(w, req)
				return
			}
			faulted.Add(1)
			switch fault {
			case "503":
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(503)
				_, _ = w.Write([]byte(`{"error":"shutting down","rule":"shutting-down"}`))
			case "500-local-tier":
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(500)
				_, _ = w.Write([]byte(`{"error":"entry 0: disk failed","rule":"local-tier","entry":0,"recorded":0}`))
			case "429":
				w.WriteHeader(429)
			case "reset":
				resetConn(t, w)
			case "recorded-then-reset":
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					t.Errorf("the recorded request answered %d %s", rec.Code, rec.Body)
				}
				resetConn(t, w)
			}
		})
	}, nil)
	model := newModel()
	var logs logBuffer
	c := p.client(t, "tcp", func(o *Options) { o.MaxAttempts, o.Logger = 20, logs.logger() })
	for round := range 12 {
		var faults []string
		for range r.IntN(6) {
			faults = append(faults, faultKinds[r.IntN(len(faultKinds))])
		}
		setPlan(faults)
		batch := randomEntries(r, 1+r.IntN(100))
		if err := c.Record(ctx, batch); err != nil {
			t.Fatalf("round %d, faults %v: %v", round, faults, err)
		}
		model.add(t, batch)
		if got := requests.Load(); got != int64(len(faults)+1) {
			t.Fatalf("round %d, faults %v: %d requests, want %d", round, faults, got, len(faults)+1)
		}
	}
	sameState(t, "local tier", p.state(t), model.state())
	if faulted.Load() > 0 && !strings.Contains(logs.String(), "retrying") {
		t.Fatalf("retries were not logged:\n%s", logs.String())
	}
	if strings.Contains(logs.String(), testToken) {
		t.Fatal("the token is in the log")
	}

	// Out of attempts: ErrUnavailable, with the last answer as an *Error.
	setPlan([]string{"503", "503", "503"})
	c3 := p.client(t, "tcp", func(o *Options) { o.MaxAttempts = 3 })
	err := c3.Record(ctx, []coverage.Entry{entry("lake", "orders", 9, 0, 1)})
	var ae *Error
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &ae) || ae.Status != 503 || ae.Rule != "shutting-down" || requests.Load() != 3 {
		t.Fatalf("three 503s with 3 attempts: %v (%d requests)", err, requests.Load())
	}
	sameState(t, "local tier after the failed call", p.state(t), model.state())
}

// TestContextCancelStopsRetrying: a server that always answers 503, and a
// context cancelled at the third request: the call ends with the
// context's error and sends nothing more.
func TestContextCancelStopsRetrying(t *testing.T) {
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var requests atomic.Int64
	p := startPod(t, func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if requests.Add(1) == 3 {
				cancel()
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			_, _ = w.Write([]byte(`{"error":"shutting down","rule":"shutting-down"}`))
		})
	}, nil)
	c := p.client(t, "tcp", func(o *Options) { o.MaxAttempts = 1000 })
	err := c.Record(cctx, []coverage.Entry{entry("lake", "orders", 0, 0, 1)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if n := requests.Load(); n != 3 {
		t.Fatalf("%d requests, want 3: retrying went on past the cancel", n)
	}
	if !strings.Contains(err.Error(), "may or may not") {
		t.Fatalf("the error does not say the outcome is unknown: %v", err)
	}
}

// TestRandomizedAgainstModel runs random record batches over both
// transports, some with one invalid entry at a random index: a refused
// batch is an *Error naming that entry and changes nothing, an accepted
// one adds its entries. The local tier and then the committed coverage
// equal the model's union.
func TestRandomizedAgainstModel(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 4))
	p := startPod(t, nil, func(o *sidecar.Options) { o.Sinks = []string{"lake"} })
	clients := map[string]*Client{"tcp": p.client(t, "tcp", nil), "socket": p.client(t, "socket", nil)}
	model := newModel()
	for round := range 60 {
		tr := transports[r.IntN(2)]
		batch := randomEntries(r, r.IntN(80))
		want := -1
		if len(batch) > 0 && r.IntN(4) == 0 {
			want = r.IntN(len(batch))
			batch[want] = badEntries[r.IntN(len(badEntries))].e
		}
		err := clients[tr].Record(ctx, batch)
		var ae *Error
		switch {
		case want < 0 && err != nil:
			t.Fatalf("round %d over %s: %v", round, tr, err)
		case want >= 0 && (!errors.As(err, &ae) || ae.Entry != want):
			t.Fatalf("round %d over %s: entry %d is invalid: %v", round, tr, want, err)
		case want < 0:
			model.add(t, batch)
		}
	}
	sameState(t, "local tier", p.state(t), model.state())
	c := clients["socket"]
	if _, err := c.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	committed, err := c.Committed(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	sameState(t, "committed", setsState(committed), model.state())
}
