package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/recovery"
)

var ctx = context.Background()

func seed(t *testing.T) uint64 {
	return testseed.Seed(t)
}

// pod is a real local tier, a real embedded coverage table and positions
// table, a Mirror over them and the sidecar in front.
type pod struct {
	local  *local.Store
	table  *iceberg.Table
	pos    *iceberg.Positions
	mirror *mirror.Mirror
	srv    *Server
	h      http.Handler
}

var testSources = []coverage.Source{
	{Name: "files", Regime: coverage.Stored},
	{Name: "orders-kafka", Regime: coverage.BrokerManaged},
}

func newPod(t testing.TB, tweak func(*Options)) *pod {
	t.Helper()
	table := tabletest.EmbeddedTable(t)
	pos, err := iceberg.OpenPositions(ctx, table.Catalog(), iceberg.Options{}, "", "pod-a", testSources...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := local.Open(local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Local: l, Durable: table, Positions: pos, Sources: testSources}
	if tweak != nil {
		tweak(&opts)
	}
	// The Mirror checkpoints into the tier the server reads, as a pod's
	// does: a wrapper a tweak put there included.
	m, err := mirror.New(mirror.Options{Local: l, Durable: opts.Durable, Writer: "pod-a", Interval: time.Hour, Positions: pos})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	opts.Mirror = m
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return &pod{local: l, table: table, pos: pos, mirror: m, srv: srv, h: srv.Handler()}
}

type promMetric = prometheus.Metric

// apiRequest is a request to the API as a program on the pod sends it:
// Host localhost, and Content-Type application/json on a write.
func apiRequest(method, path string, body io.Reader) *http.Request {
	req := httptest.NewRequest(method, path, body)
	req.Host = "localhost:9464"
	if method != http.MethodGet && method != http.MethodHead {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

type answer struct {
	code int
	body map[string]any
	raw  string
}

// do sends a request as a program on the pod would: Host localhost, and a
// write's Content-Type application/json unless contentType says another
// ("-": none).
func (p *pod) do(t testing.TB, method, path, contentType string, body []byte) answer {
	t.Helper()
	req := apiRequest(method, path, bytes.NewReader(body))
	switch contentType {
	case "":
	case "-":
		req.Header.Del("Content-Type")
	default:
		req.Header.Set("Content-Type", contentType)
	}
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, req)
	a := answer{code: rec.Code, raw: rec.Body.String()}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: Content-Type %q, body %s: every answer is JSON", method, path, ct, a.raw)
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &a.body) // arrays leave body nil
	return a
}

type entry struct {
	Sink      string `json:"sink"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     uint64 `json:"start"`
	End       uint64 `json:"end"`
}

func randomEntries(r *rand.Rand, n int) []entry {
	out := make([]entry, n)
	for i := range out {
		start := r.Uint64N(10_000)
		out[i] = entry{Sink: []string{"raw", "lake", "search"}[r.IntN(3)], Topic: "orders", Partition: int32(r.IntN(4)), Start: start, End: start + 1 + r.Uint64N(50)}
	}
	return out
}

func marshal(t testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// localState is every destination's local coverage.
func localState(t testing.TB, l *local.Store) map[coverage.Destination][]coverage.Range {
	t.Helper()
	dests, err := l.Destinations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[coverage.Destination][]coverage.Range{}
	for _, d := range dests {
		set, err := l.Covered(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if set.Len() > 0 {
			out[d] = set.Ranges()
		}
	}
	return out
}

// model is the reference: the union of the entries, in memory.
func model(t testing.TB, entries []entry) map[coverage.Destination][]coverage.Range {
	m := coverage.NewInMemory()
	for _, e := range entries {
		if err := m.Record(ctx, coverage.Destination{Sink: e.Sink, Topic: e.Topic, Partition: e.Partition}, coverage.Range{Start: e.Start, End: e.End}); err != nil {
			t.Fatal(err)
		}
	}
	out := map[coverage.Destination][]coverage.Range{}
	dests, _ := m.Destinations(ctx)
	for _, d := range dests {
		set, _ := m.Covered(ctx, d)
		out[d] = set.Ranges()
	}
	return out
}

func sameState(t testing.TB, got, want map[coverage.Destination][]coverage.Range) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("local tier has %d destinations, the model %d", len(got), len(want))
	}
	for d, w := range want {
		if !slices.Equal(got[d], w) {
			t.Fatalf("%s: local tier %v, model %v", d, got[d], w)
		}
	}
}

// TestRecordsAllOrNothing puts one bad entry among 1,000 at a random index,
// for every rule: 400 naming the entry and the rule, and nothing recorded.
// Then the same 1,000 without it are recorded, equal to the model.
func TestRecordsAllOrNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 1))
	p := newPod(t, nil)
	good := randomEntries(r, 1000)
	bad := []struct {
		name, entry, rule string
	}{
		{"unknown field", `{"sink":"raw","topic":"t","partition":0,"start":1,"end":2,"acked":true}`, "unknown-field"},
		{"case variant", `{"sink":"raw","topic":"t","partition":0,"Start":1,"end":2}`, "unknown-field"},
		{"duplicate key in another case", `{"sink":"raw","topic":"t","partition":0,"start":1,"end":2,"END":900}`, "unknown-field"},
		{"duplicate key", `{"sink":"raw","topic":"t","partition":0,"start":1,"end":2,"end":900}`, "duplicate-field"},
		{"escaped key", `{"sink":"raw","topic":"t","partition":0,"start":1,"\u0065nd":2}`, "unknown-field"},
		{"key-like string value", `{"sink":"raw","topic":"x\":","partition":0,"start":1,"end":2,"acked":1}`, "unknown-field"},
		{"string number", `{"sink":"raw","topic":"t","partition":0,"start":"1","end":2}`, "type"},
		{"number sink", `{"sink":7,"topic":"t","partition":0,"start":1,"end":2}`, "type"},
		{"not an object", `[1,2]`, "type"},
		{"null", `null`, "missing-field"},
		{"missing end", `{"sink":"raw","topic":"t","partition":0,"start":1}`, "missing-field"},
		{"negative partition", `{"sink":"raw","topic":"t","partition":-1,"start":1,"end":2}`, "partition"},
		{"partition past int32", `{"sink":"raw","topic":"t","partition":2147483648,"start":1,"end":2}`, "partition"},
		{"fractional partition", `{"sink":"raw","topic":"t","partition":1.5,"start":1,"end":2}`, "partition"},
		{"start past uint64", `{"sink":"raw","topic":"t","partition":0,"start":18446744073709551616,"end":2}`, "uint64"},
		{"negative start", `{"sink":"raw","topic":"t","partition":0,"start":-1,"end":2}`, "uint64"},
		{"exponent end", `{"sink":"raw","topic":"t","partition":0,"start":1,"end":1e3}`, "uint64"},
		{"end past MaxBatchEnd", `{"sink":"raw","topic":"t","partition":0,"start":1,"end":9223372036854775808}`, "max-batch-end"},
		{"empty sink", `{"sink":"","topic":"t","partition":0,"start":1,"end":2}`, "invalid-destination"},
		{"control character in sink", `{"sink":"ra\u0000w","topic":"t","partition":0,"start":1,"end":2}`, "invalid-destination"},
		{"overlong topic", `{"sink":"raw","topic":"` + strings.Repeat("x", coverage.MaxNameLen+1) + `","partition":0,"start":1,"end":2}`, "invalid-destination"},
		{"inverted range", `{"sink":"raw","topic":"t","partition":0,"start":5,"end":2}`, "invalid-range"},
		{"empty range", `{"sink":"raw","topic":"t","partition":0,"start":5,"end":5}`, "invalid-range"},
	}
	for _, b := range bad {
		for _, ndjson := range []bool{false, true} {
			at := r.IntN(len(good) + 1)
			parts := make([]string, 0, len(good)+1)
			for i, e := range good {
				if i == at {
					parts = append(parts, b.entry)
				}
				parts = append(parts, string(marshal(t, e)))
			}
			if at == len(good) {
				parts = append(parts, b.entry)
			}
			body, ct := "["+strings.Join(parts, ",")+"]", "application/json"
			if ndjson {
				body, ct = strings.Join(parts, "\n")+"\n", "application/x-ndjson"
			}
			a := p.do(t, "POST", "/v1/records", ct, []byte(body))
			if a.code != http.StatusBadRequest || a.body["rule"] != b.rule || a.body["entry"] != float64(at) {
				t.Fatalf("%s at entry %d (ndjson %v): %d %s; want 400, entry %d, rule %s", b.name, at, ndjson, a.code, a.raw, at, b.rule)
			}
			if got := localState(t, p.local); len(got) != 0 {
				t.Fatalf("%s: a refused request recorded %v", b.name, got)
			}
		}
	}
	a := p.do(t, "POST", "/v1/records", "application/json", marshal(t, good))
	if a.code != http.StatusOK || a.body["recorded"] != float64(len(good)) {
		t.Fatalf("good batch: %d %s", a.code, a.raw)
	}
	sameState(t, localState(t, p.local), model(t, good))
}

func TestRecordsBodies(t *testing.T) {
	p := newPod(t, func(o *Options) { o.MaxBodyBytes = 4096 })
	huge := marshal(t, randomEntries(rand.New(rand.NewPCG(1, 2)), 200)) // > 4 KiB
	for _, c := range []struct {
		name, ct, body string
		code           int
		rule           string
	}{
		{"oversize", "application/json", string(huge), 413, "body-too-large"},
		{"oversize ndjson", "application/x-ndjson", strings.Repeat(`{"sink":"raw","topic":"t","partition":0,"start":1,"end":2}`+"\n", 100), 413, "body-too-large"},
		{"not json", "application/json", `[{"sink":`, 400, "json"},
		{"object, not array", "application/json", `{"sink":"raw","topic":"t","partition":0,"start":1,"end":2}`, 400, "type"},
		{"two arrays", "application/json", `[][]`, 400, "json"},
		{"text", "text/plain", `[]`, 415, "content-type"},
		{"ndjson garbage line", "application/x-ndjson", "{\"sink\":\"raw\",\"topic\":\"t\",\"partition\":0,\"start\":1,\"end\":2}\nnope\n", 400, "json"},
	} {
		a := p.do(t, "POST", "/v1/records", c.ct, []byte(c.body))
		if a.code != c.code || a.body["rule"] != c.rule || a.body["error"] == "" {
			t.Errorf("%s: %d %s; want %d rule %s", c.name, a.code, a.raw, c.code, c.rule)
		}
	}
	if got := localState(t, p.local); len(got) != 0 {
		t.Fatalf("refused bodies recorded %v", got)
	}
	if a := p.do(t, "POST", "/v1/records", "", []byte(`[]`)); a.code != 200 || a.body["recorded"] != float64(0) {
		t.Fatalf("empty array: %d %s", a.code, a.raw)
	}
}

// TestHostileNames records names that are paths, quotes, escapes and the
// longest allowed, and reads them back exactly from the local tier and,
// after a checkpoint, from the gaps. A name with a control character is
// refused (coverage.ValidName), and one already in the store, from before
// that rule, still checkpoints and reads back.
func TestHostileNames(t *testing.T) {
	p := newPod(t, nil)
	names := []string{"../../etc/passwd", `a"b\c`, "sp ace/slash", "%2F%00", "ümlaut-日本", "'; DROP TABLE coverage; --", strings.Repeat("n", coverage.MaxNameLen)}
	var entries []entry
	for i, n := range names {
		entries = append(entries, entry{Sink: "raw", Topic: n, Partition: int32(i), Start: 0, End: 10})
		entries = append(entries, entry{Sink: n, Topic: n, Partition: int32(i), Start: 0, End: 5})
	}
	const ctl = "ctl\u0001\u007f"
	for _, bad := range []entry{{Sink: "raw", Topic: ctl, End: 1}, {Sink: "raw", Topic: "t\nforged/orders/0 [0,1) missing 1 batches", End: 1}, {Sink: "la\u0085ke", Topic: "t", End: 1}} {
		for _, ct := range []string{"application/json", "application/x-ndjson"} {
			body := marshal(t, append(slices.Clone(entries), bad))
			if ct == "application/x-ndjson" {
				var lines []byte
				for _, e := range append(slices.Clone(entries), bad) {
					lines = append(append(lines, marshal(t, e)...), '\n')
				}
				body = lines
			}
			if a := p.do(t, "POST", "/v1/records", ct, body); a.code != 400 || a.body["rule"] != "invalid-destination" || strings.ContainsAny(strings.TrimSpace(a.raw), "\x01\x7f\n\u0085") {
				t.Fatalf("record %q over %s: %d %s; want 400 invalid-destination, the name quoted", bad.Topic, ct, a.code, a.raw)
			}
		}
	}
	if got := localState(t, p.local); len(got) != 0 {
		t.Fatalf("a refused batch recorded %v", got)
	}
	if a := p.do(t, "POST", "/v1/records", "application/json", marshal(t, entries)); a.code != 200 {
		t.Fatalf("record: %d %s", a.code, a.raw)
	}
	old := entry{Sink: "raw", Topic: ctl, Partition: 0, Start: 0, End: 1} // in the local tier from before the rule
	if err := p.local.Record(context.Background(), coverage.Destination{Sink: old.Sink, Topic: old.Topic}, coverage.Range{Start: 0, End: 1}); err != nil {
		t.Fatal(err)
	}
	entries = append(entries, old)
	sameState(t, localState(t, p.local), model(t, entries))
	if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 || a.body["batches"] != float64(10*len(names)+5*len(names)+1) {
		t.Fatalf("checkpoint: %d %s", a.code, a.raw)
	}
	var want []recovery.Gap
	for i, n := range names {
		want = append(want, recovery.Gap{Sink: n, Topic: n, Partition: int32(i), Start: 5, End: 10, Kind: recovery.KindReplay})
	}
	for i, n := range names {
		q := fmt.Sprintf("/v1/gaps?sink=%s&topic=%s&partition=%d", urlQuery(n), urlQuery(n), i)
		req := apiRequest("GET", q, nil)
		rec := httptest.NewRecorder()
		p.h.ServeHTTP(rec, req)
		var got []recovery.Gap
		if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || rec.Code != 200 {
			t.Fatalf("gaps of %q: %d %s", n, rec.Code, rec.Body)
		}
		if len(got) != 1 || got[0] != want[i] {
			t.Fatalf("gaps of %q: %v, want %v", n, got, want[i])
		}
	}
}

// Names that are not UTF-8 text, as raw bytes or as escapes of lone UTF-16
// surrogates, are refused: encoding/json would turn each into U+FFFD, so
// "x\udcff" and "x\udcfe" would become one topic, and one caller's
// coverage would claim the other's batches. A surrogate pair is a character
// like any other.
func TestNamesThatAreNotUTF8(t *testing.T) {
	p := newPod(t, nil)
	for _, name := range []string{`x\udcff`, `x\ud800`, `x\ud800\u0041`, `x\ud800\\udc00`, "x\xff", "x\xed\xa0\x80", `\udfff`} {
		for _, field := range []string{"sink", "topic"} {
			other := map[string]string{"sink": "topic", "topic": "sink"}[field]
			body := `[{"` + field + `":"` + name + `","` + other + `":"ok","partition":0,"start":0,"end":10}]`
			a := p.do(t, "POST", "/v1/records", "application/json", []byte(body))
			if a.code != 400 || a.body["rule"] != "invalid-utf8" || a.body["entry"] != float64(0) {
				t.Fatalf("%s %q: %d %s; want 400, rule invalid-utf8, entry 0", field, name, a.code, a.raw)
			}
		}
	}
	if got := localState(t, p.local); len(got) != 0 {
		t.Fatalf("refused names recorded %v", got)
	}
	body := `[{"sink":"raw","topic":"smile \ud83d\ude00","partition":0,"start":0,"end":10}]`
	if a := p.do(t, "POST", "/v1/records", "application/json", []byte(body)); a.code != 200 {
		t.Fatalf("a surrogate pair: %d %s", a.code, a.raw)
	}
	sameState(t, localState(t, p.local), map[coverage.Destination][]coverage.Range{
		{Sink: "raw", Topic: "smile \U0001F600"}: {{Start: 0, End: 10}}})
}

func urlQuery(s string) string {
	return strings.NewReplacer("%", "%25", "&", "%26", "+", "%2B", " ", "%20", "#", "%23", "?", "%3F", "\"", "%22", "'", "%27", ";", "%3B", "\\", "%5C").Replace(s)
}

// TestConcurrentRecords sends batches from several goroutines (run it with
// -race): the local tier ends equal to the model of all of them.
func TestConcurrentRecords(t *testing.T) {
	r := rand.New(rand.NewPCG(seed(t), 3))
	p := newPod(t, nil)
	const workers, requests = 8, 25
	batches := make([][]entry, workers*requests)
	var all []entry
	for i := range batches {
		batches[i] = randomEntries(r, 100)
		all = append(all, batches[i]...)
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(batches))
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(batches); i += workers {
				req := apiRequest("POST", "/v1/records", bytes.NewReader(marshal(t, batches[i])))
				rec := httptest.NewRecorder()
				p.h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					errs <- rec.Body.String()
				}
				if i%50 == 0 { // checkpoints meanwhile
					req := apiRequest("POST", "/v1/checkpoint", nil)
					rec := httptest.NewRecorder()
					p.h.ServeHTTP(rec, req)
					if rec.Code != 200 {
						errs <- rec.Body.String()
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
	sameState(t, localState(t, p.local), model(t, all))
}

func TestMethodsAndRoutes(t *testing.T) {
	p := newPod(t, nil)
	for _, c := range []struct {
		method, path string
		code         int
		rule         string
	}{
		{"GET", "/v1/records", 405, "method"},
		{"DELETE", "/v1/checkpoint", 405, "method"},
		{"PUT", "/v1/gaps", 405, "method"},
		{"DELETE", "/v1/plan", 405, "method"},
		{"POST", "/v1/committed", 405, "method"},
		{"POST", "/v1/extents", 405, "method"},
		{"POST", "/v1/gaps", 400, "invalid-extent"}, // no body
		{"GET", "/v1/plan?acked_end=5", 400, "invalid-extent"},
		{"GET", "/v1/plan?topic=t&partition=0&acked_end=-5", 400, "invalid-extent"},
		{"GET", "/v1/plan?topic=t&partition=0&acked_end=5&acked_start=6", 400, "invalid-extent"},
		{"GET", "/v1/gaps?acked_start=5", 400, "invalid-extent"},
		{"GET", "/v1/plan?max_tasks=0", 400, "query"},
		{"PUT", "/v1/coverage", 405, "method"},
		{"POST", "/v1/positions/files", 405, "method"},
		{"GET", "/nope", 404, "route"},
		{"POST", "/v1/records/extra", 404, "route"},
		{"GET", "/v1/gaps?partition=-3", 400, "partition"},
		{"GET", "/v1/gaps?partition=x", 400, "partition"},
	} {
		a := p.do(t, c.method, c.path, "", nil)
		if a.code != c.code || a.body["rule"] != c.rule {
			t.Errorf("%s %s: %d %s; want %d %s", c.method, c.path, a.code, a.raw, c.code, c.rule)
		}
	}
	if a := p.do(t, "GET", "/v1/coverage", "", nil); a.code != 200 || a.body["destinations"] == nil {
		t.Fatalf("coverage: %d %s", a.code, a.raw)
	}
}

// TestPositionsNeverPastARawGap: a position whose raw_end lies past a hole
// in raw's committed coverage is not returned until the hole is recorded
// and checkpointed; positions are invisible until a checkpoint saved them.
func TestPositionsNeverPastARawGap(t *testing.T) {
	p := newPod(t, nil)
	rec := func(start, end uint64) {
		t.Helper()
		if a := p.do(t, "POST", "/v1/records", "", marshal(t, []entry{{Sink: "raw", Topic: "files", Partition: 2, Start: start, End: end}})); a.code != 200 {
			t.Fatalf("record: %s", a.raw)
		}
	}
	put := func(cursor string, rawEnd uint64) {
		t.Helper()
		a := p.do(t, "PUT", "/v1/positions/files", "", marshal(t, map[string]any{"partition": 2, "cursor": cursor, "raw_end": rawEnd}))
		if a.code != 200 {
			t.Fatalf("put: %d %s", a.code, a.raw)
		}
	}
	get := func() answer {
		t.Helper()
		a := p.do(t, "GET", "/v1/positions/files?partition=2", "", nil)
		if a.code != 200 {
			t.Fatalf("get: %d %s", a.code, a.raw)
		}
		return a
	}
	checkpoint := func() {
		t.Helper()
		if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 {
			t.Fatalf("checkpoint: %s", a.raw)
		}
	}
	rec(0, 10)
	put("file-0009", 10)
	if a := get(); a.body["found"] != false {
		t.Fatalf("a position before any checkpoint: %s", a.raw)
	}
	checkpoint()
	if a := get(); a.body["cursor"] != "file-0009" || a.body["raw_end"] != float64(10) {
		t.Fatalf("after the checkpoint: %s", a.raw)
	}
	rec(20, 30) // raw's record of [10,20) is missing
	put("file-0029", 30)
	checkpoint()
	if a := get(); a.body["cursor"] != "file-0009" {
		t.Fatalf("a position past raw's hole [10,20) was returned: %s", a.raw)
	}
	rec(10, 20)
	if a := get(); a.body["cursor"] != "file-0009" {
		t.Fatalf("resolved against the local tier, not the committed coverage: %s", a.raw)
	}
	checkpoint()
	if a := get(); a.body["cursor"] != "file-0029" || a.body["raw_end"] != float64(30) {
		t.Fatalf("after the hole was checkpointed: %s", a.raw)
	}
}

func TestPositionsRegimes(t *testing.T) {
	p := newPod(t, nil)
	body := marshal(t, map[string]any{"partition": 0, "cursor": "c", "raw_end": 1})
	for _, c := range []struct {
		method, path string
		body         []byte
		code         int
		rule         string
	}{
		{"PUT", "/v1/positions/orders-kafka", body, 409, "broker-managed"},
		{"GET", "/v1/positions/orders-kafka?partition=0", nil, 409, "broker-managed"},
		{"PUT", "/v1/positions/nobody", body, 404, "unknown-source"},
		{"GET", "/v1/positions/nobody?partition=0", nil, 404, "unknown-source"},
		{"GET", "/v1/positions/files", nil, 400, "partition"},
		{"PUT", "/v1/positions/files", []byte(`{"partition":0,"cursor":"","raw_end":1}`), 400, "invalid-position"},
		{"PUT", "/v1/positions/files", []byte(`{"partition":0,"cursor":"c","raw_end":0}`), 400, "invalid-position"},
		{"PUT", "/v1/positions/files", []byte(`{"partition":-1,"cursor":"c","raw_end":3}`), 400, "partition"},
		{"PUT", "/v1/positions/files", []byte(`{"partition":0,"cursor":"c"}`), 400, "missing-field"},
		{"PUT", "/v1/positions/files", []byte(`{"partition":0,"cursor":"c","raw_end":3,"x":1}`), 400, "json"},
	} {
		a := p.do(t, c.method, c.path, "", c.body)
		if a.code != c.code || a.body["rule"] != c.rule {
			t.Errorf("%s %s %s: %d %s; want %d %s", c.method, c.path, c.body, a.code, a.raw, c.code, c.rule)
		}
	}
	if a := p.do(t, "PUT", "/v1/positions/nobody", "", body); !strings.Contains(a.raw, "source.nobody = stored") {
		t.Errorf("the 404 does not say what to configure: %s", a.raw)
	}
}

// TestShutdownAndFailedLocalTier: after Shutdown writes answer 503
// "shutting down"; a closed local tier answers 503 naming how many were
// recorded.
func TestShutdownAndFailedLocalTier(t *testing.T) {
	p := newPod(t, nil)
	if err := p.local.Close(); err != nil {
		t.Fatal(err)
	}
	a := p.do(t, "POST", "/v1/records", "", marshal(t, randomEntries(rand.New(rand.NewPCG(1, 1)), 3)))
	if a.code != 503 || a.body["recorded"] != float64(0) || a.body["rule"] != "local-tier" || !strings.Contains(a.raw, "none are recorded") || strings.Contains(a.raw, "to -1") {
		t.Fatalf("closed local tier: %d %s", a.code, a.raw)
	}
	if err := p.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/records", "/v1/checkpoint"} {
		if a := p.do(t, "POST", path, "", []byte(`[]`)); a.code != 503 || a.body["error"] != "shutting down" {
			t.Fatalf("%s after Shutdown: %d %s", path, a.code, a.raw)
		}
	}
}

func TestExtraAndCollector(t *testing.T) {
	p := newPod(t, func(o *Options) {
		o.Extra = map[string]http.Handler{"GET /v1/map": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, 200, map[string]string{"map": "here"})
		})}
	})
	if a := p.do(t, "GET", "/v1/map", "", nil); a.code != 200 || a.body["map"] != "here" {
		t.Fatalf("extra: %d %s", a.code, a.raw)
	}
	_ = p.do(t, "POST", "/v1/records", "", []byte(`[{"sink":"raw"}]`))
	_ = p.do(t, "POST", "/v1/records", "", marshal(t, randomEntries(rand.New(rand.NewPCG(1, 1)), 7)))
	var out bytes.Buffer
	ch := make(chan promMetric, 100)
	go func() { p.srv.Collector().Collect(ch); close(ch) }()
	for m := range ch {
		fmt.Fprintln(&out, m.Desc().String())
	}
	if n := strings.Count(out.String(), "covmirror_sidecar_"); n < 3 {
		t.Fatalf("collector: %s", out.String())
	}
	_, err := New(Options{Mirror: p.mirror, Local: p.local, Durable: p.table, Extra: map[string]http.Handler{"/v1/records": http.NotFoundHandler()}})
	if err == nil {
		t.Fatal("an Extra route conflicting with /v1/records was accepted")
	}
	_, _ = io.Discard.Write(nil)
}

// TestSourceNamedDot: "." and ".." are refused at configuration: a URL
// path cleans them away, so no client could address their positions.
func TestSourceNamedDot(t *testing.T) {
	for _, name := range []string{".", ".."} {
		o := Options{Mirror: &mirror.Mirror{}, Local: &local.Store{}, Durable: &iceberg.Table{},
			Sources: []coverage.Source{{Name: name, Regime: coverage.BrokerManaged}}}
		o.EnsureDefaults()
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "URL path segment") {
			t.Errorf("source %q: %v; want refused as a URL path segment", name, err)
		}
	}
}

// TestPutPositionStrict: PUT /v1/positions' body is held to the record
// entries' rules; a refused body buffers nothing.
func TestPutPositionStrict(t *testing.T) {
	p := newPod(t, nil)
	for _, c := range []struct{ body, rule string }{
		{`{"partition":0,"cursor":"a","cursor":"b","raw_end":3}`, "duplicate-field"},
		{`{"Partition":0,"cursor":"a","raw_end":3}`, "unknown-field"},
		{`{"partition":0,"CURSOR":"a","raw_end":3}`, "unknown-field"},
		{`{"partition":"0","cursor":"a","raw_end":3}`, "type"},
		{`{"partition":0,"cursor":"a","raw_end":"3"}`, "type"},
		{`{"partition":0,"cursor":"a","raw_end":3} x`, "json"},
		{`{"partition":0,"cursor":"a","raw_end":3}{}`, "json"},
		{`{"partition":-0,"cursor":"a","raw_end":3}`, "partition"},
		{"{\"partition\":0,\"cursor\":\"a\xff\",\"raw_end\":3}", "invalid-utf8"},
		{`{"partition":0,"cursor":"a\udc00","raw_end":3}`, "invalid-utf8"},
		{`{"partition":0,"cursor":"a\ud800x","raw_end":3}`, "invalid-utf8"},
		{`null`, "missing-field"},
	} {
		a := p.do(t, "PUT", "/v1/positions/files", "", []byte(c.body))
		if a.code != 400 || a.body["rule"] != c.rule || !strings.Contains(a.raw, "nothing was buffered") && c.rule != "missing-field" && c.rule != "partition" {
			t.Errorf("PUT %s: %d %s; want 400 %s", c.body, a.code, a.raw, c.rule)
		}
	}
	if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 || a.body["positions"] != float64(0) {
		t.Fatalf("after refused PUTs the checkpoint saved positions: %d %s", a.code, a.raw)
	}
	if a := p.do(t, "PUT", "/v1/positions/files", "", []byte(`{"partition":0,"cursor":"a\ud83d\ude00","raw_end":3}`)); a.code != 200 {
		t.Fatalf("a valid PUT (a surrogate pair): %d %s", a.code, a.raw)
	}
}

// TestNoReferenceListsFewSinks: the no-reference error names the first 20
// sinks and counts the rest.
func TestNoReferenceListsFewSinks(t *testing.T) {
	p := newPod(t, nil)
	var entries []entry
	for i := range 25 {
		entries = append(entries, entry{Sink: fmt.Sprintf("x%02d", i), Topic: "orders", Partition: 0, Start: 0, End: 1})
	}
	if a := p.do(t, "POST", "/v1/records", "", marshal(t, entries)); a.code != 200 {
		t.Fatalf("record: %d %s", a.code, a.raw)
	}
	if a := p.do(t, "POST", "/v1/checkpoint", "", nil); a.code != 200 {
		t.Fatalf("checkpoint: %d %s", a.code, a.raw)
	}
	a := p.do(t, "GET", "/v1/gaps", "", nil)
	if a.code != 404 || a.body["rule"] != "no-reference" || !strings.Contains(a.raw, "and 5 more") || strings.Contains(a.raw, "x20") {
		t.Fatalf("gaps without the reference: %d %s; want 404 naming 20 sinks and 5 more", a.code, a.raw)
	}
}
