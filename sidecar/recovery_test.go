package sidecar

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/recovery"
)

// gapRows is an answer of /v1/gaps or /v1/plan.
func gapRows(t *testing.T, a answer) []recovery.Gap {
	t.Helper()
	var rows []recovery.Gap
	if a.code != 200 {
		t.Fatalf("%d %s", a.code, a.raw)
	}
	if err := json.Unmarshal([]byte(a.raw), &rows); err != nil {
		t.Fatalf("%s: %v", a.raw, err)
	}
	return rows
}

// recordAndCheckpoint records one range through the API and checkpoints.
func (p *pod) recordAndCheckpoint(t *testing.T, sink string, start, end uint64) {
	t.Helper()
	body := fmt.Sprintf(`[{"sink":%q,"topic":"orders","partition":0,"start":%d,"end":%d}]`, sink, start, end)
	if a := p.do(t, "POST", "/v1/records", "application/json", []byte(body)); a.code != 200 {
		t.Fatalf("record: %d %s", a.code, a.raw)
	}
	if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 {
		t.Fatalf("checkpoint: %d %s", a.code, a.raw)
	}
}

// TestRecoveryOverTheAPIWithExtents: the first stretch of orders/0 was lost
// on every tier (raw and lake recorded only [10,20)), so no destination's
// coverage shows a hole and GET /v1/gaps used to answer [] for ever. With
// the source's acked extent [0,20) (in the query, a POST body, or reported
// with PUT /v1/extents) raw's [0,10) is a hole to verify; the recovery loop
// over /v1/plan (verify or replay, record, checkpoint) then closes it and
// the lake's replay that follows.
func TestRecoveryOverTheAPIWithExtents(t *testing.T) {
	p := newPod(t, nil)
	p.recordAndCheckpoint(t, "raw", 10, 20)
	p.recordAndCheckpoint(t, "lake", 10, 20)
	if rows := gapRows(t, p.do(t, "GET", "/v1/gaps", "", nil)); len(rows) != 0 {
		t.Fatalf("gaps without an extent: %v, want none", rows)
	}
	hole := []recovery.Gap{{Sink: "raw", Topic: "orders", Start: 0, End: 10, Kind: recovery.KindVerifyReference}}
	const body = `[{"topic":"orders","partition":0,"end":20}]`
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/gaps?topic=orders&partition=0&acked_end=20", ""},
		{"POST", "/v1/gaps", body},
		{"GET", "/v1/plan?topic=orders&partition=0&acked_end=20&acked_start=0", ""},
		{"POST", "/v1/plan?max_batches=100", body},
	} {
		if rows := gapRows(t, p.do(t, c.method, c.path, "application/json", []byte(c.body))); !slices.Equal(rows, hole) {
			t.Fatalf("%s %s %s: %v, want %v", c.method, c.path, c.body, rows, hole)
		}
	}
	// The book: once reported, every request looks over the extent.
	if a := p.do(t, "PUT", "/v1/extents", "application/json", []byte(body)); a.code != 200 {
		t.Fatalf("PUT /v1/extents: %d %s", a.code, a.raw)
	}
	rawHeld := coverage.Range{Start: 0, End: 20}
	var kinds []recovery.TaskKind
	for round := 0; ; round++ {
		tasks := gapRows(t, p.do(t, "GET", "/v1/plan", "", nil))
		if len(tasks) == 0 {
			break
		}
		if round == 5 {
			t.Fatalf("the plan never empties: %v", tasks)
		}
		for _, task := range tasks {
			kinds = append(kinds, task.Kind)
			// A verifier reads raw back and records only what raw holds
			// of the task's range (raw holds [0,20): the source acked
			// it); a replay to the lake is acked. Each is recorded, then
			// checkpointed.
			start, end := task.Start, task.End
			if task.Kind == recovery.KindVerifyReference {
				start, end = max(start, rawHeld.Start), min(end, rawHeld.End)
			}
			if start < end {
				p.recordAndCheckpoint(t, task.Sink, start, end)
			}
		}
	}
	if want := []recovery.TaskKind{recovery.KindVerifyReference, recovery.KindReplay}; !slices.Equal(kinds, want) {
		t.Fatalf("tasks of kinds %v, want %v", kinds, want)
	}
	a := p.do(t, "GET", "/v1/committed?topic=orders", "", nil)
	if a.code != 200 || a.raw != `[{"sink":"lake","topic":"orders","partition":0,"start":0,"end":20},{"sink":"raw","topic":"orders","partition":0,"start":0,"end":20}]`+"\n" {
		t.Fatalf("committed: %d %s", a.code, a.raw)
	}
}

// An over-reported end only adds verification work: the lake is given no
// replay past raw's committed coverage, nothing is claimed covered, and a
// later, lower report narrows nothing. A declared start keeps an extent
// given without one from reaching below the stream's first batch.
func TestReportedExtentsOnlyWiden(t *testing.T) {
	p := newPod(t, func(o *Options) { o.Starts = map[string]uint64{"orders": 10} })
	p.recordAndCheckpoint(t, "raw", 10, 20)
	p.recordAndCheckpoint(t, "lake", 10, 15)
	for _, body := range []string{`[{"topic":"orders","partition":0,"end":30}]`, `[{"topic":"orders","partition":0,"end":12}]`} {
		if a := p.do(t, "PUT", "/v1/extents", "application/json", []byte(body)); a.code != 200 {
			t.Fatalf("PUT /v1/extents %s: %d %s", body, a.code, a.raw)
		}
	}
	if a := p.do(t, "GET", "/v1/extents", "", nil); a.raw != `[{"topic":"orders","partition":0,"start":10,"end":30}]`+"\n" {
		t.Fatalf("the book: %s, want orders/0 [10,30) (declared start, highest end)", a.raw)
	}
	want := []recovery.Gap{
		{Sink: "lake", Topic: "orders", Start: 15, End: 20, Kind: recovery.KindReplay},
		{Sink: "raw", Topic: "orders", Start: 20, End: 30, Kind: recovery.KindVerifyReference},
	}
	if rows := gapRows(t, p.do(t, "GET", "/v1/gaps", "", nil)); !slices.Equal(rows, want) {
		t.Fatalf("gaps: %v, want %v", rows, want)
	}
	a := p.do(t, "GET", "/v1/committed?sink=lake", "", nil)
	if a.raw != `[{"sink":"lake","topic":"orders","partition":0,"start":10,"end":15}]`+"\n" {
		t.Fatalf("committed lake: %s: an extent claimed coverage", a.raw)
	}
	if a := p.do(t, "PUT", "/v1/extents", "application/json", []byte(`[{"topic":"orders","partition":0,"end":5}]`)); a.code != 400 || a.body["rule"] != "invalid-extent" {
		t.Fatalf("an end below the declared start: %d %s, want 400 invalid-extent", a.code, a.raw)
	}
	if a := p.do(t, "PUT", "/v1/extents", "text/plain", []byte(`[]`)); a.code != 415 {
		t.Fatalf("text/plain: %d %s, want 415", a.code, a.raw)
	}
}

// The book is bounded: a report past it keeps nothing.
func TestExtentBookBound(t *testing.T) {
	b := NewExtentBook(2)
	if err := b.Report(nil); err != nil {
		t.Fatal(err)
	}
	p := newPod(t, func(o *Options) { o.Extents = b })
	if a := p.do(t, "PUT", "/v1/extents", "application/json", []byte(`[{"topic":"a","partition":0,"end":1},{"topic":"a","partition":1,"end":1},{"topic":"a","partition":2,"end":1}]`)); a.code != 400 || a.body["rule"] != "too-many-extents" {
		t.Fatalf("three partitions into a book of two: %d %s", a.code, a.raw)
	}
	if got := b.Extents(); len(got) != 0 {
		t.Fatalf("a refused report kept %v", got)
	}
}
