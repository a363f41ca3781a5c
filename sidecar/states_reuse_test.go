package sidecar

import (
	"net/http"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/gapstate"
)

// An ID reused for another decision (a hostile or confused caller) is
// refused with 409, nothing recorded: answering 200 with the new event
// would say a reopen was recorded while the pod keeps the refusal. A
// retry (the same decision, stamped again) is still a 200 that adds
// nothing.
func TestStatesIDReusedForAnotherDecision(t *testing.T) {
	p, store := statesPod(t)
	first := `{"id":"r1","sink":"lake","topic":"orders","partition":0,"start":5,"end":10,"state":"refused","reason":"400"}`
	if a := p.do(t, "POST", "/v1/states", "", stateBody(first)); a.code != http.StatusOK {
		t.Fatalf("the first decision: %d %s", a.code, a.raw)
	}
	for _, c := range []struct{ name, entry string }{
		{"another state", `{"id":"r1","sink":"lake","topic":"orders","partition":0,"start":5,"end":10,"state":"reopened","reason":"400"}`},
		{"another range", `{"id":"r1","sink":"lake","topic":"orders","partition":0,"start":0,"end":100,"state":"refused","reason":"400"}`},
		{"another sink", `{"id":"r1","sink":"search","topic":"orders","partition":0,"start":5,"end":10,"state":"refused","reason":"400"}`},
		{"another reason", `{"id":"r1","sink":"lake","topic":"orders","partition":0,"start":5,"end":10,"state":"refused","reason":"422"}`},
	} {
		a := p.do(t, "POST", "/v1/states", "", stateBody(c.entry))
		if a.code != http.StatusConflict || !strings.Contains(a.raw, "nothing was recorded") || !strings.Contains(a.raw, `\"r1\"`) {
			t.Errorf("%s under a taken ID: %d %.300s; want 409, the ID quoted and nothing recorded", c.name, a.code, a.raw)
		}
	}
	// Two decisions under one ID in one request: refused whole.
	other := `{"id":"r2","sink":"lake","topic":"orders","partition":0,"start":20,"end":30,"state":"refused","reason":"400"}`
	again := `{"id":"r2","sink":"lake","topic":"orders","partition":0,"start":20,"end":30,"state":"reopened","reason":"fixed"}`
	if a := p.do(t, "POST", "/v1/states", "", stateBody(other, again)); a.code != http.StatusConflict {
		t.Errorf("two decisions under one ID in a request: %d %.300s; want 409", a.code, a.raw)
	}
	if a := p.do(t, "POST", "/v1/states", "", stateBody(first)); a.code != http.StatusOK {
		t.Errorf("a retry: %d %s, want 200", a.code, a.raw)
	}
	events := store.Events()
	if len(events) != 1 || events[0].State != gapstate.Refused || events[0].End != 10 {
		t.Fatalf("the store holds %+v; want the first decision alone", events)
	}
	if pending := p.local.PendingStates(); len(pending) != 0 {
		t.Errorf("pending locally: %+v; want none", pending)
	}
}

// Ranges past what the durable tier's signed 64-bit columns hold, up to
// [0, 2^64) and past it, are refused with 400 and a bounded answer,
// nothing recorded.
func TestStatesHugeRanges(t *testing.T) {
	p, store := statesPod(t)
	for _, r := range []struct{ start, end string }{
		{"0", "18446744073709551615"},
		{"0", "18446744073709551616"},
		{"9223372036854775807", "9223372036854775808"},
		{"0", "1e30"},
		{"0", "99999999999999999999999999999999999999999999999999"},
	} {
		body := stateBody(`{"sink":"lake","topic":"orders","partition":0,"start":` + r.start + `,"end":` + r.end + `,"state":"refused","reason":"400"}`)
		a := p.do(t, "POST", "/v1/states", "", body)
		if a.code != http.StatusBadRequest || !strings.Contains(a.raw, "nothing was recorded") || len(a.raw) > 1024 {
			t.Errorf("[%s, %s): %d %.300s (%d bytes); want 400, nothing recorded, under 1 KiB", r.start, r.end, a.code, a.raw, len(a.raw))
		}
	}
	if n := len(store.Events()) + len(p.local.PendingStates()); n != 0 {
		t.Errorf("%d events recorded, want none", n)
	}
}
