package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/browsertest"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/local"
)

// attackPage tries every write and read a page can make on the record API
// at BASE ("" for its own origin, as after DNS rebinding) and leaves what
// it could see in window.results.
const attackPage = `<!doctype html><html><body><script>
"use strict";
var base = new URLSearchParams(location.search).get("base") || "";
var rec = JSON.stringify([{sink: "lake", topic: "orders", partition: 0, start: 0, end: 1000000}]);
var out = {};
async function tryFetch(name, path, init) {
  try {
    var r = await fetch(base + path, init);
    var body = "";
    try { body = await r.text(); } catch (e) { body = ""; }
    out[name] = {status: r.status, type: r.type, body: body.slice(0, 300)};
  } catch (e) { out[name] = {error: String(e)}; }
}
function formPost(path, enctype, name, value) {
  return new Promise(function (resolve) {
    var f = document.createElement("iframe"); f.name = "f" + Math.random(); document.body.appendChild(f);
    f.onload = function () { resolve(); };
    var form = document.createElement("form"); form.method = "POST"; form.action = base + path; form.enctype = enctype; form.target = f.name;
    var i = document.createElement("input"); i.type = "hidden"; i.name = name; i.value = value;
    form.appendChild(i); document.body.appendChild(form); form.submit();
  });
}
(async function () {
  await tryFetch("POST records no-cors", "/v1/records", {method: "POST", mode: "no-cors", body: rec});
  await tryFetch("POST records text/plain", "/v1/records", {method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body: rec});
  await tryFetch("POST records json", "/v1/records", {method: "POST", headers: {"Content-Type": "application/json"}, body: rec});
  await tryFetch("POST checkpoint no-cors", "/v1/checkpoint", {method: "POST", mode: "no-cors"});
  await tryFetch("POST checkpoint json", "/v1/checkpoint", {method: "POST", headers: {"Content-Type": "application/json"}});
  await tryFetch("PUT position", "/v1/positions/files", {method: "PUT", headers: {"Content-Type": "application/json"}, body: JSON.stringify({partition: 0, cursor: "evil", raw_end: 1000000})});
  await tryFetch("PUT position text/plain", "/v1/positions/files", {method: "PUT", headers: {"Content-Type": "text/plain"}, body: JSON.stringify({partition: 0, cursor: "evil", raw_end: 1000000})});
  await formPost("/v1/records", "text/plain", '[{"sink":"lake', 'x","topic":"orders","partition":0,"start":0,"end":1000000}]');
  await formPost("/v1/records", "application/x-www-form-urlencoded", "a", rec);
  await formPost("/v1/checkpoint", "multipart/form-data", "a", "b");
  var reads = ["/v1/gaps", "/v1/map", "/metrics", "/debug/coverage", "/v1/coverage", "/v1/positions/files?partition=0", "/"];
  for (var k = 0; k < reads.length; k++) {
    await tryFetch("GET " + reads[k], reads[k], {});
    await tryFetch("GET no-cors " + reads[k], reads[k], {mode: "no-cors"});
  }
  window.results = out;
  document.body.dataset.done = "1";
})();
</script></body></html>`

// serveAttack serves attackPage at /attack.html; every other path goes to
// target when it is set, with the request's own Host: what the sidecar sees
// of a rebound name.
func serveAttack(t *testing.T, target string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/attack.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, attackPage)
	})
	if target != "" {
		u, _ := url.Parse("http://" + target)
		mux.Handle("/", httputil.NewSingleHostReverseProxy(u)) // keeps the Host header
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://127.0.0.1")
}

type attempt struct {
	Status int    `json:"status"`
	Type   string `json:"type"`
	Body   string `json:"body"`
	Error  string `json:"error"`
}

// runAttack opens the page in the browser and returns what it saw.
func runAttack(t *testing.T, ctx context.Context, pageURL string) map[string]attempt {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := chromedp.Do(wctx, chromedp.Navigate(pageURL)); err != nil {
		t.Fatalf("the attack page %s: %v", pageURL, err)
	}
	if _, err := chromedp.Run(wctx, chromedp.Poll[chromedp.Void](`document.body && document.body.dataset.done === "1"`, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		t.Fatalf("the attack page %s did not finish: %v", pageURL, err)
	}
	raw, err := chromedp.Run(wctx, chromedp.Evaluate[string](`JSON.stringify(window.results)`))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]attempt
	if err := json.Unmarshal([]byte(raw), &out); err != nil || len(out) < 20 {
		t.Fatalf("the attack page's results %s: %v", raw, err)
	}
	return out
}

// A page of another origin (another site, and another port of the same
// host) and a page whose name was rebound to the pod's address try every
// write and read of a real `covmirror serve` in headless Chromium: nothing
// is recorded (the local tier and the durable tier after SIGTERM's final
// checkpoint hold only what the pipeline recorded), no position is saved,
// and no answer carries data. Before the guard, the first no-cors POST
// recorded lake [0,1000000) and the rebound page read the gaps, the map
// and the metrics.
func TestServeBrowserPagesOfOtherOriginsGetNothing(t *testing.T) {
	bin := buildBinary(t)
	state := t.TempDir()
	p := startServe(t, bin, state)
	sock := unixClient(p.socket)
	if code, body := call(t, sock, "POST", "http://covmirror/v1/records", `[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":100}]`); code != 200 {
		t.Fatalf("the pipeline's record: %d %s", code, body)
	}
	ctx := browsertest.Start(t, chromedp.Flag("host-resolver-rules", "MAP evil.test 127.0.0.1, MAP rebound.test 127.0.0.1"))

	other := serveAttack(t, "")
	for _, page := range []string{
		"http://evil.test" + other + "/attack.html?base=http://" + p.addr,                      // another site
		"http://127.0.0.1" + other + "/attack.html?base=http://" + p.addr,                      // another port: same site, another origin
		"http://localhost" + other + "/attack.html?base=http://localhost:" + portOf(t, p.addr), // same-site by name
	} {
		for name, a := range runAttack(t, ctx, page) {
			if a.Body != "" && a.Status == 200 {
				t.Errorf("%s: %s read %d %.200s", page, name, a.Status, a.Body)
			}
		}
	}
	rebound := serveAttack(t, p.addr)
	for name, a := range runAttack(t, ctx, "http://rebound.test"+rebound+"/attack.html") {
		if a.Error == "" && (a.Status != http.StatusMisdirectedRequest || !strings.Contains(a.Body, `"rule":"host"`)) {
			t.Errorf("rebound page: %s answered %d %.200s; want 421 rule host", name, a.Status, a.Body)
		}
	}

	p.stop(t) // the final checkpoint carries whatever was recorded
	stdout, _, err := runCLI(t, state, "inspect", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var diag local.Diagnostics
	if err := json.Unmarshal([]byte(stdout), &diag); err != nil {
		t.Fatal(err)
	}
	for _, d := range diag.Destinations {
		if d.Destination != (coverage.Destination{Sink: "raw", Topic: "orders", Partition: 0}) {
			t.Errorf("the local tier holds %v: a page recorded it", d.Destination)
		}
	}
	table := tabletest.EmbeddedTableIn(t, state)
	committed, err := table.Coverage(context.Background(), durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	raw := coverage.Destination{Sink: "raw", Topic: "orders", Partition: 0}
	if len(committed) != 1 || committed[raw] == nil || committed[raw].String() != "{[0,100)}" {
		t.Errorf("the durable tier holds %v; want raw/orders/0 [0,100) alone", committed)
	}
	pos, err := iceberg.OpenPositions(context.Background(), table.Catalog(), iceberg.Options{}, "", "test", coverage.Source{Name: "files", Regime: coverage.Stored})
	if err != nil {
		t.Fatal(err)
	}
	defer pos.Close()
	if stored, err := pos.Positions(context.Background(), "files", 0); err != nil || len(stored) != 0 {
		t.Errorf("positions of files: %v %v; want none saved", stored, err)
	}
}

func portOf(t *testing.T, addr string) string {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// forward is kubectl port-forward in small: a local port whose
// connections are copied to target.
func forward(t *testing.T, target string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer up.Close()
				go func() { _, _ = io.Copy(up, c) }()
				_, _ = io.Copy(c, up)
			}()
		}
	}()
	return portOf(t, ln.Addr().String())
}

// With --token-file, the coverage map opened through a port-forward on
// another local port asks for the token, keeps it for the tab, and draws
// the map; a wrong token is refused and asked for again. Without the token
// every other route is 401.
func TestServeBrowserMapWithToken(t *testing.T) {
	bin := buildBinary(t)
	state := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "token")
	const token = "map-token-0123456789abcdef"
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, bin, state, "--token-file", tokenFile)
	if code, body := call(t, http.DefaultClient, "GET", "http://"+p.addr+"/v1/map", ""); code != 401 || !strings.Contains(body, `"rule":"token"`) {
		t.Fatalf("the map's data without the token: %d %s", code, body)
	}
	sock := unixClient(p.socket)
	for _, r := range []string{`[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":100}]`, `[{"sink":"lake","topic":"orders","partition":0,"start":0,"end":40}]`} {
		if code, body := call(t, sock, "POST", "http://covmirror/v1/records", r); code != 200 {
			t.Fatalf("record over the socket: %d %s", code, body)
		}
	}
	if code, body := call(t, sock, "POST", "http://covmirror/v1/checkpoint", ""); code != 200 {
		t.Fatalf("checkpoint: %d %s", code, body)
	}
	port := forward(t, p.addr)
	ctx := browsertest.Start(t)
	wait := func(what, expr string) {
		t.Helper()
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if _, err := chromedp.Run(wctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
			state, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.state + " | " + document.getElementById("error").textContent + " | " + document.getElementById("auth-msg").textContent`))
			t.Fatalf("waiting for %s: %v (page: %s)", what, err, state)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("http://localhost:"+port+"/#sink=lake")); err != nil {
		t.Fatal(err)
	}
	wait("the token prompt", `document.body.dataset.state === "token"`)
	if err := chromedp.Do(ctx, chromedp.SendKeys("#token", "wrong-token-0123456789"), chromedp.Click("#auth-go")); err != nil {
		t.Fatal(err)
	}
	wait("the refusal", `document.body.dataset.state === "token" && document.getElementById("auth-msg").textContent.indexOf("refused") >= 0`)
	if err := chromedp.Do(ctx, chromedp.SendKeys("#token", token), chromedp.Click("#auth-go")); err != nil {
		t.Fatal(err)
	}
	wait("lake's bar", `document.body.dataset.state === "ok" && document.querySelectorAll(".bar[data-sink=lake]").length === 1`)
	// A reload in the same tab keeps the token: no prompt.
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	wait("the map after a reload", `document.body.dataset.state === "ok" && document.querySelectorAll(".bar[data-sink=lake]").length === 1`)
	if gaps, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector(".bar[data-sink=lake]").dataset.gaps`)); err != nil || gaps != "40-100" {
		t.Fatalf("lake's drawn gaps %q (%v), want 40-100", gaps, err)
	}
	if strings.Contains(p.stderr.String(), token) {
		t.Fatalf("serve logged the token: %s", p.stderr.String())
	}
}
