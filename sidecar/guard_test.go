package sidecar

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/memstates"
)

const testToken = "t0k3n-for-the-guard-tests-only"

// livePod is a pod whose API is served on a real loopback listener (and a
// Unix socket), with mounts standing for serve's map, /metrics and
// /debug/coverage that count every request they answer.
type livePod struct {
	*pod
	states       *memstates.Store
	base, socket string
	extraCalls   *atomic.Int64
}

func newLivePod(t *testing.T, tweak func(*Options)) *livePod {
	t.Helper()
	calls := new(atomic.Int64)
	states := memstates.New()
	mount := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		writeJSON(w, http.StatusOK, map[string]string{"mounted": r.URL.Path})
	})
	p := newPod(t, func(o *Options) {
		o.Extra = map[string]http.Handler{"GET /{$}": mount, "GET /v1/map": mount, "/metrics": mount, "/debug/coverage": mount}
		o.Durable = memstates.With(o.Durable, states) // a refused POST /v1/states would show there
		if tweak != nil {
			tweak(o)
		}
	})
	ln, err := ListenTCP("127.0.0.1:0", p.srv.opts.Token != "", nil)
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(t.TempDir(), "api.sock")
	uln, err := ListenUnix(socket)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.srv.Serve(ln) }()
	go func() { _ = p.srv.Serve(uln) }()
	t.Cleanup(func() { _ = p.srv.Shutdown(context.Background()) })
	return &livePod{pod: p, states: states, base: "http://" + ln.Addr().String(), socket: socket, extraCalls: calls}
}

// send makes one request over TCP (or the socket when overSocket), with
// the headers given as name, value pairs; "Host" sets the Host header.
func (lp *livePod) send(t *testing.T, overSocket bool, method, path, body string, headers ...string) (int, string, http.Header) {
	t.Helper()
	url, client := lp.base+path, http.DefaultClient
	if overSocket {
		url = "http://covmirror" + path
		client = &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", lp.socket)
		}}}
	}
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// route is one request to each thing the server exposes, as a program on
// the pod sends it.
type route struct{ method, path, body string }

var everyRoute = []route{
	{"POST", "/v1/records", `[{"sink":"lake","topic":"orders","partition":0,"start":0,"end":1000000}]`},
	{"POST", "/v1/checkpoint", ""},
	{"POST", "/v1/release", `[{"topic":"orders","partition":0}]`},
	{"GET", "/v1/gaps", ""},
	{"GET", "/v1/coverage", ""},
	{"PUT", "/v1/positions/files", `{"partition":0,"cursor":"c","raw_end":1000000}`},
	{"GET", "/v1/positions/files?partition=0", ""},
	{"GET", "/", ""},
	{"GET", "/v1/map", ""},
	{"GET", "/metrics", ""},
	{"GET", "/debug/coverage", ""},
	{"GET", "/no-such-route", ""},
	{"POST", "/v1/states", `{"states":[{"sink":"lake","topic":"orders","partition":0,"start":0,"end":10,"state":"refused","reason":"r"}]}`},
}

// nothingHappened checks the pod's local tier, durable tier and positions
// after refused requests: no coverage recorded, nothing checkpointed, no
// position saved, no mounted handler run.
func (lp *livePod) nothingHappened(t *testing.T, pendingBefore uint64) {
	t.Helper()
	if got := localState(t, lp.local); len(got[coverage.Destination{Sink: "lake", Topic: "orders", Partition: 0}]) != 0 {
		t.Errorf("refused requests recorded into the local tier: %v", got)
	}
	diag, err := lp.local.Diagnostics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diag.PendingBatches != pendingBefore {
		t.Errorf("pending batches %d, want %d: a refused checkpoint ran, or a refused record landed", diag.PendingBatches, pendingBefore)
	}
	committed, err := lp.table.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(committed) != 0 {
		t.Errorf("the durable tier holds %v after refused requests", committed)
	}
	// A position PUT is buffered until a checkpoint; this one, allowed,
	// would save any that slipped through.
	if code, body, _ := lp.send(t, true, "POST", "/v1/checkpoint", ""); code != 200 {
		t.Fatalf("checkpoint over the socket: %d %s", code, body)
	}
	stored, err := lp.pos.Positions(ctx, "files", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 0 {
		t.Errorf("a refused PUT saved the positions %v", stored)
	}
	if events := lp.states.Events(); len(events) != 0 {
		t.Errorf("refused requests recorded the gap states %v", events)
	}
	if n := lp.extraCalls.Load(); n != 0 {
		t.Errorf("a mounted handler answered %d refused requests", n)
	}
}

// DNS rebinding: a page whose name an attacker points at 127.0.0.1 sends
// its own name as Host (and its own origin). Every route refuses it with
// 421, over real HTTP, and nothing is recorded, checkpointed, saved or
// read. Localhost and IP literals on any port (a port-forward) pass.
func TestForeignHostRefusedOnEveryRoute(t *testing.T) {
	lp := newLivePod(t, nil)
	for _, host := range []string{"attacker.example:9464", "attacker.example", "localhost.attacker.example:80", "127.0.0.1.nip.io:9464"} {
		for _, r := range everyRoute {
			code, body, _ := lp.send(t, false, r.method, r.path, r.body, "Host", host, "Content-Type", "application/json", "Origin", "http://"+host)
			if code != http.StatusMisdirectedRequest || !strings.Contains(body, `"rule":"host"`) {
				t.Errorf("%s %s with Host %q: %d %s; want 421 rule host", r.method, r.path, host, code, body)
			}
		}
	}
	lp.nothingHappened(t, 0)
	if got := rejects(t, lp.srv, routeRecords, "host"); got != 4 {
		t.Errorf("rejects{route=%q,rule=host} = %v, want 4", routeRecords, got)
	}
	if got := rejects(t, lp.srv, "GET /v1/map", "host"); got != 4 {
		t.Errorf("rejects{route=GET /v1/map,rule=host} = %v, want 4", got)
	}
	for _, host := range []string{"localhost:8080", "LOCALHOST.:1", "127.0.0.1:9464", "127.5.6.7", "[::1]:18080", "10.1.2.3:9464"} {
		if code, body, _ := lp.send(t, false, "GET", "/v1/gaps", "", "Host", host); code != 200 {
			t.Errorf("GET /v1/gaps with Host %q: %d %s", host, code, body)
		}
	}
}

// AllowedHosts admits a configured name and only it.
func TestAllowedHosts(t *testing.T) {
	lp := newLivePod(t, func(o *Options) { o.AllowedHosts = []string{"covmirror.ingest.svc"} })
	if code, body, _ := lp.send(t, false, "GET", "/v1/gaps", "", "Host", "Covmirror.Ingest.Svc:9464"); code != 200 {
		t.Errorf("an allowed host: %d %s", code, body)
	}
	if code, _, _ := lp.send(t, false, "GET", "/v1/gaps", "", "Host", "other.ingest.svc:9464"); code != 421 {
		t.Errorf("a host not allowed: %d", code)
	}
	if _, err := New(Options{Mirror: lp.mirror, Local: lp.local, Durable: lp.table, AllowedHosts: []string{"host:9464"}}); err == nil {
		t.Error("an allowed host with a port was accepted")
	}
}

// What a page of another origin can send without a CORS preflight (no
// Content-Type, text/plain, a form) is refused on every write, and so is
// any write or read that carries a foreign Origin or a cross-site
// Sec-Fetch-Site; nothing lands. Before the guard, the first of these
// recorded lake [0,1000000).
func TestBrowserShapedRequestsRefused(t *testing.T) {
	lp := newLivePod(t, nil)
	writes := []route{everyRoute[0], everyRoute[1], everyRoute[2], everyRoute[5], everyRoute[12]}
	for _, w := range writes {
		for _, ct := range []string{"", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx"} {
			code, body, _ := lp.send(t, false, w.method, w.path, w.body, "Content-Type", ct)
			if code != http.StatusUnsupportedMediaType || !strings.Contains(body, `"rule":"content-type"`) {
				t.Errorf("%s %s with Content-Type %q: %d %s; want 415", w.method, w.path, ct, code, body)
			}
		}
	}
	for _, r := range everyRoute {
		for _, h := range [][]string{
			{"Origin", "http://evil.example"},
			{"Origin", "null"},
			{"Origin", "http://127.0.0.1:1"}, // another port: another origin
			{"Sec-Fetch-Site", "cross-site"},
			{"Sec-Fetch-Site", "same-site"}, // localhost:8000 to localhost:9464
		} {
			code, body, _ := lp.send(t, false, r.method, r.path, r.body, "Content-Type", "application/json", h[0], h[1])
			if code != http.StatusForbidden || !strings.Contains(body, `"rule":"origin"`) {
				t.Errorf("%s %s with %s: %s: %d %s; want 403 rule origin", r.method, r.path, h[0], h[1], code, body)
			}
		}
	}
	lp.nothingHappened(t, 0)
	if got := rejects(t, lp.srv, routeStates, "origin"); got != 5 {
		t.Errorf("rejects{route=%q,rule=origin} = %v, want 5", routeStates, got)
	}
	// A link from another site to the map still opens it; the page's own
	// requests carry its own origin.
	if code, body, _ := lp.send(t, false, "GET", "/", "", "Sec-Fetch-Site", "cross-site", "Sec-Fetch-Mode", "navigate"); code != 200 {
		t.Errorf("a cross-site navigation to the map: %d %s", code, body)
	}
	own := strings.TrimPrefix(lp.base, "http://")
	if code, body, _ := lp.send(t, false, "POST", "/v1/records", `[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":5}]`,
		"Content-Type", "application/json", "Origin", "http://"+own, "Sec-Fetch-Site", "same-origin"); code != 200 {
		t.Errorf("a write from the server's own origin: %d %s", code, body)
	}
}

// With a token, every route but the public page needs it: missing or
// wrong is 401 with WWW-Authenticate, and nothing lands; the right one
// passes on every route. The socket needs none.
func TestTokenOnEveryRoute(t *testing.T) {
	lp := newLivePod(t, func(o *Options) { o.Token = testToken; o.PublicPaths = []string{"/"} })
	for _, r := range everyRoute {
		if r.path == "/" {
			continue
		}
		for _, auth := range []string{"", "Bearer ", "Bearer wrong-token-of-some-length", "Basic " + testToken, testToken, "Bearer " + testToken + "x"} {
			code, body, hdr := lp.send(t, false, r.method, r.path, r.body, "Content-Type", "application/json", "Authorization", auth)
			if code != http.StatusUnauthorized || !strings.Contains(body, `"rule":"token"`) || !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("%s %s with Authorization %q: %d %s; want 401 rule token", r.method, r.path, auth, code, body)
			}
			if strings.Contains(body, testToken) {
				t.Errorf("the answer quotes the token: %s", body)
			}
		}
	}
	if code, _, _ := lp.send(t, false, "POST", "/", "x", "Content-Type", "application/json"); code != 401 {
		t.Errorf("POST / without the token: %d, want 401 (only GET and HEAD of a public path are open)", code)
	}
	lp.nothingHappened(t, 0)
	if code, body, _ := lp.send(t, false, "GET", "/", ""); code != 200 || !strings.Contains(body, "mounted") {
		t.Errorf("the public page without the token: %d %s", code, body)
	}
	for _, r := range everyRoute {
		code, body, _ := lp.send(t, false, r.method, r.path, r.body, "Content-Type", "application/json", "Authorization", "bearer "+testToken)
		if code == 401 || code == 403 || code == 415 || code == 421 {
			t.Errorf("%s %s with the token: %d %s", r.method, r.path, code, body)
		}
	}
	if code, body, _ := lp.send(t, true, "GET", "/v1/coverage", ""); code != 200 {
		t.Errorf("the socket without the token: %d %s", code, body)
	}
}

// The socket keeps what it always accepted: any Host (curl --unix-socket
// sends localhost, Go's client the URL's), no token, records with no
// Content-Type read as a JSON array.
func TestSocketIsNotGuarded(t *testing.T) {
	lp := newLivePod(t, func(o *Options) { o.Token = testToken })
	if code, body, _ := lp.send(t, true, "POST", "/v1/records", `[{"sink":"lake","topic":"orders","partition":0,"start":0,"end":7}]`, "Host", "anything"); code != 200 || !strings.Contains(body, `"recorded":1`) {
		t.Fatalf("record over the socket: %d %s", code, body)
	}
	if code, body, _ := lp.send(t, true, "POST", "/v1/checkpoint", ""); code != 200 {
		t.Fatalf("checkpoint over the socket: %d %s", code, body)
	}
}

func TestOptionsRefuseABadToken(t *testing.T) {
	p := newPod(t, nil)
	for _, tok := range []string{"short", "has a space in it, long enough", "tab\tin-the-middle-of-it-xx", "ünïcødé-token-long-enough"} {
		if _, err := New(Options{Mirror: p.mirror, Local: p.local, Durable: p.table, Token: tok}); err == nil {
			t.Errorf("token %q accepted", tok)
		} else if strings.Contains(err.Error(), tok) {
			t.Errorf("the error quotes the token: %v", err)
		}
	}
}

func TestListenTCPNeedsATokenOffLoopback(t *testing.T) {
	ln, err := ListenTCP("0.0.0.0:0", true, nil)
	if err != nil {
		t.Fatalf("a wildcard address with a token: %v", err)
	}
	_ = ln.Close()
}

func rejects(t *testing.T, s *Server, route, rule string) float64 {
	t.Helper()
	var m dto.Metric
	if err := s.counters.rejects.WithLabelValues(route, rule).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
