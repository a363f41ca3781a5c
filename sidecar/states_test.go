package sidecar

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/memstates"
	"github.com/covmirror/covmirror/recovery"
)

// statesPod is a pod whose durable tier keeps its gap states in memory
// (memstates), until the tiers keep them themselves.
func statesPod(t *testing.T) (*pod, *memstates.Store) {
	t.Helper()
	store := memstates.New()
	p := newPod(t, func(o *Options) { o.Durable = memstates.With(o.Durable, store) })
	return p, store
}

func stateBody(entries ...string) []byte {
	return []byte(`{"states":[` + strings.Join(entries, ",") + `]}`)
}

const refusedEntry = `{"sink":"lake","topic":"orders","partition":0,"start":5,"end":10,"state":"refused","reason":"400: bad row"}`

// A good POST /v1/states is recorded in the durable tier's state store
// before the answer, with an ID, the pod's writer name and a time; it
// records no coverage; the gaps then list the refused range with its
// decision, a waived one only with ?all=1.
func TestStatesRecorded(t *testing.T) {
	p, store := statesPod(t)
	a := p.do(t, "POST", "/v1/states", "", stateBody(refusedEntry,
		`{"id":"retry-1","sink":"raw","topic":"orders","partition":0,"start":30,"end":31,"state":"unrecoverable","reason":"expired"}`,
		`{"sink":"lake","topic":"orders","partition":1,"start":0,"end":2,"state":"reopened","reason":"fixed"}`))
	if a.code != 200 || a.body["recorded"] != float64(3) {
		t.Fatalf("POST /v1/states: %d %s", a.code, a.raw)
	}
	events := store.Events()
	if len(events) != 3 {
		t.Fatalf("the store holds %v, want 3 events", events)
	}
	for _, e := range events {
		if e.By != "pod-a" || e.At.IsZero() || e.ID == "" {
			t.Errorf("event %+v: want by pod-a, a time and an ID", e)
		}
	}
	if !slices.ContainsFunc(events, func(e gapstate.Event) bool { return e.ID == "retry-1" && e.Sink == "raw" }) {
		t.Errorf("the client's ID was not kept: %+v", events)
	}
	// The same ID again (a retry) adds nothing.
	if a := p.do(t, "POST", "/v1/states", "", stateBody(`{"id":"retry-1","sink":"raw","topic":"orders","partition":0,"start":30,"end":31,"state":"unrecoverable","reason":"expired"}`)); a.code != 200 {
		t.Fatalf("a retry: %d %s", a.code, a.raw)
	}
	if n := len(store.Events()); n != 3 {
		t.Errorf("a retry with the same ID made %d events, want 3", n)
	}
	if got := localState(t, p.local); len(got) != 0 {
		t.Errorf("recording states recorded coverage: %v", got)
	}
	// Coverage, then the gaps: raw [0,20), lake [0,5); lake [5,10) refused
	// above, [10,15) waived (the CLI's act, written straight to the store).
	if a := p.do(t, "POST", "/v1/records", "", []byte(`[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":20},{"sink":"lake","topic":"orders","partition":0,"start":0,"end":5}]`)); a.code != 200 {
		t.Fatalf("records: %d %s", a.code, a.raw)
	}
	if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 {
		t.Fatalf("checkpoint: %d %s", a.code, a.raw)
	}
	waived := gapstate.Event{ID: "w1", Destination: coverage.Destination{Sink: "lake", Topic: "orders"}, Range: coverage.Range{Start: 10, End: 15},
		State: gapstate.Waived, Reason: "test data", By: "alice@ops", At: events[0].At}
	if err := store.AppendStates(ctx, []gapstate.Event{waived}); err != nil {
		t.Fatal(err)
	}
	kinds := func(path string) string {
		rec := p.do(t, "GET", path, "", nil)
		var gaps []recovery.Gap
		if err := json.Unmarshal([]byte(rec.raw), &gaps); err != nil {
			t.Fatalf("GET %s: %d %s: %v", path, rec.code, rec.raw, err)
		}
		var out []string
		for _, g := range gaps {
			if g.Sink == "lake" && g.Partition == 0 {
				s := fmt.Sprintf("%d-%d %s", g.Start, g.End, g.Kind)
				if g.Decision != nil {
					s += " by " + g.Decision.By
				}
				out = append(out, s)
			}
		}
		return strings.Join(out, ", ")
	}
	if got, want := kinds("/v1/gaps?sink=lake"), "5-10 refused by pod-a, 15-20 replay"; got != want {
		t.Errorf("GET /v1/gaps: %s, want %s", got, want)
	}
	if got, want := kinds("/v1/gaps?sink=lake&all=1"), "5-10 refused by pod-a, 10-15 waived by alice@ops, 15-20 replay"; got != want {
		t.Errorf("GET /v1/gaps?all=1: %s, want %s", got, want)
	}
	if n := count(t, p, routeStates, "200"); n != 2 {
		t.Errorf("covmirror_sidecar_requests_total{route=%q,code=200} = %v, want 2", routeStates, n)
	}
}

// Hostile and malformed bodies are refused whole with 400 (413 past the
// body limit), nothing recorded, and the answer is JSON that carries no
// markup as markup.
func TestStatesHostile(t *testing.T) {
	p, store := statesPod(t)
	many := make([]string, MaxStatesPerRequest+1)
	for i := range many {
		many[i] = refusedEntry
	}
	entry := func(field, value string) string {
		m := map[string]any{}
		_ = json.Unmarshal([]byte(refusedEntry), &m)
		if value == "" {
			delete(m, field)
		} else {
			var v any
			if err := json.Unmarshal([]byte(value), &v); err != nil {
				t.Fatal(err)
			}
			m[field] = v
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	for _, c := range []struct {
		name string
		body []byte
		code int
	}{
		{"not JSON", []byte(`{"states":[`), 400},
		{"an array", []byte(`[` + refusedEntry + `]`), 400},
		{"two objects", append(stateBody(refusedEntry), stateBody(refusedEntry)...), 400},
		{"unknown field", []byte(`{"states":[],"extra":1}`), 400},
		{"unknown entry field", []byte(`{"states":[{"sink":"lake","topic":"orders","partition":0,"start":5,"end":10,"state":"refused","reason":"r","by":"mallory"}]}`), 400},
		{"empty", stateBody(), 400},
		{"1,001 entries", stateBody(many...), 400},
		{"a control character in the reason", stateBody(entry("reason", `"bad\u0007bell"`)), 400},
		{"an escape in the reason", stateBody(entry("reason", `"\u001b[31mred"`)), 400},
		{"a reason too long", stateBody(entry("reason", `"`+strings.Repeat("x", gapstate.MaxReasonLen+1)+`"`)), 400},
		{"a blank reason", stateBody(entry("reason", `"  "`)), 400},
		{"no reason", stateBody(entry("reason", "")), 400},
		{"waived", stateBody(entry("state", `"waived"`)), 400},
		{"covered", stateBody(entry("state", `"covered"`)), 400},
		{"no state", stateBody(entry("state", "")), 400},
		{"no partition", stateBody(entry("partition", "")), 400},
		{"no start", stateBody(entry("start", "")), 400},
		{"no end", stateBody(entry("end", "")), 400},
		{"no sink", stateBody(entry("sink", "")), 400},
		{"an empty range", stateBody(entry("end", "5")), 400},
		{"a negative start", stateBody(entry("start", "-1")), 400},
		{"a bad ID", stateBody(entry("id", `"../x"`)), 400},
		{"a name with a newline", stateBody(entry("sink", `"la\nke"`)), 400},
		{"a good entry, then a bad one", stateBody(refusedEntry, entry("state", `"waived"`)), 400},
		{"past the body limit", stateBody(refusedEntry + strings.Repeat(" ", DefaultMaxBodyBytes)), 413},
	} {
		a := p.do(t, "POST", "/v1/states", "", c.body)
		if a.code != c.code || !strings.Contains(a.raw, "nothing was recorded") {
			t.Errorf("%s: %d %.300s; want %d and nothing recorded", c.name, a.code, a.raw, c.code)
		}
	}
	// Markup in a reason is text: kept as sent, answered escaped in JSON.
	html := `<script>alert(1)</script> & <b>`
	a := p.do(t, "POST", "/v1/states", "", stateBody(entry("reason", fmt.Sprintf("%q", html))))
	if a.code != 200 {
		t.Fatalf("a reason with markup: %d %s", a.code, a.raw)
	}
	if strings.Contains(a.raw, "<script>") {
		t.Errorf("the answer carries the markup unescaped: %s", a.raw)
	}
	events := store.Events()
	if len(events) != 1 || events[0].Reason != html {
		t.Errorf("the store holds %+v; want the one event with its reason as sent", events)
	}
	if n := count(t, p, routeStates, "400"); n != 24 {
		t.Errorf("covmirror_sidecar_requests_total{route=%q,code=400} = %v, want 24", routeStates, n)
	}
	if a := p.do(t, "GET", "/v1/states", "", nil); a.code != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/states: %d %s, want 405", a.code, a.raw)
	}
	if n := count(t, p, routeStates, "405"); n != 1 {
		t.Errorf("a GET of /v1/states is counted under %v, want route %q", n, routeStates)
	}
}

// A tier without gap states answers 501 and records nothing; a store that
// fails answers 503, saying to retry with the same IDs.
func TestStatesTierFails(t *testing.T) {
	p := newPod(t, func(o *Options) { o.Durable = noStates{o.Durable} })
	if a := p.do(t, "POST", "/v1/states", "", stateBody(refusedEntry)); a.code != http.StatusNotImplemented || a.body["rule"] != "no-states" {
		t.Errorf("a tier without states: %d %s, want 501 no-states", a.code, a.raw)
	}
	// A durable tier that lost its answer, or that is down: the states are
	// durable in the local tier (200), pending there until a checkpoint
	// ships them, once each.
	p, store := statesPod(t)
	store.LoseAnswers(1)
	if a := p.do(t, "POST", "/v1/states", "", stateBody(refusedEntry)); a.code != http.StatusOK {
		t.Errorf("a store that lost its answer: %d %s, want 200 (durable in the local tier)", a.code, a.raw)
	}
	store.SetDown(true)
	if a := p.do(t, "POST", "/v1/states", "", stateBody(`{"sink":"lake","topic":"orders","partition":0,"start":12,"end":14,"state":"refused","reason":"422"}`)); a.code != http.StatusOK {
		t.Errorf("a store that is down: %d %s, want 200 (durable in the local tier)", a.code, a.raw)
	}
	if n := len(store.Events()); n != 1 {
		t.Fatalf("the store holds %d events while down, want the one whose answer was lost", n)
	}
	if pending := p.local.PendingStates(); len(pending) != 2 {
		t.Fatalf("the local tier holds %d pending states, want both: %+v", len(pending), pending)
	}
	if err := p.mirror.Sync(ctx); err == nil {
		t.Fatalf("a checkpoint while the store is down returned nil, want the states' failure")
	}
	store.SetDown(false)
	if err := p.mirror.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if n, pending := len(store.Events()), p.local.PendingStates(); n != 2 || len(pending) != 0 {
		t.Fatalf("after the store healed and a checkpoint: %d events held, %d pending locally; want 2 and 0", n, len(pending))
	}
	if got := localState(t, p.local); len(got) != 0 {
		t.Errorf("recording states recorded coverage: %v", got)
	}
}

// noStates is a durable tier that keeps no gap states.
type noStates struct{ durable.Tier }

// A state naming a destination with a control character is refused as a
// record is (coverage.ValidName), the name quoted, nothing recorded.
func TestStatesRefuseControlNames(t *testing.T) {
	p, store := statesPod(t)
	for _, bad := range []string{
		`{"sink":"lake","topic":"t\nforged","partition":0,"start":5,"end":10,"state":"refused","reason":"x"}`,
		`{"sink":"la\u007fke","topic":"orders","partition":0,"start":5,"end":10,"state":"refused","reason":"x"}`,
	} {
		a := p.do(t, "POST", "/v1/states", "", stateBody(refusedEntry, bad))
		if a.code != 400 || !strings.Contains(a.raw, "control character") || strings.ContainsAny(strings.TrimSpace(a.raw), "\n\x7f") {
			t.Errorf("POST /v1/states %s: %d %s; want 400 naming the control character, quoted", bad, a.code, a.raw)
		}
	}
	if events := store.Events(); len(events) != 0 {
		t.Fatalf("a refused call recorded %v", events)
	}
}
