package covmap

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/covmirror/covmirror/recovery"
)

// navigate goes to u, marking the current page stale first: a
// navigation within the page (the hash alone changes) keeps the document,
// and the next "ok" must be the new view's.
func navigate(t *testing.T, ctx context.Context, u string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!!(document.body && (document.body.dataset.state = "stale"))`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(u)); err != nil {
		t.Fatal(err)
	}
}

// open navigates to the map at path and waits for its data.
func open(t *testing.T, ctx context.Context, base, path string) {
	t.Helper()
	navigate(t, ctx, base+path)
	waitFor(t, ctx, "the map of "+path, `document.body.dataset.state === "ok"`)
}

// The header says when the table was committed, in UTC with its age, not
// a snapshot id; a source without commit times shows the read's time.
func TestBrowserHeaderCommitTime(t *testing.T) {
	f := newViewFixture(t, nil)
	c, err := f.table.Committed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if c.CommittedAt.IsZero() || c.SnapshotID == 0 {
		t.Fatalf("TableSource gave no commit time (%v) or snapshot (%d)", c.CommittedAt, c.SnapshotID)
	}
	v, _ := getMap(t, f.srv.URL+"/v1/map")
	if v.CommittedAt == nil || !v.CommittedAt.Equal(c.CommittedAt) {
		t.Errorf("/v1/map committed_at %v, want the snapshot's %v", v.CommittedAt, c.CommittedAt)
	}
	ctx := browser(t)
	open(t, ctx, f.srv.URL, "/")
	head := evaluate[string](t, ctx, `document.querySelector("header").textContent`)
	want := "table committed " + c.CommittedAt.UTC().Format(time.DateTime) + " UTC ("
	if !strings.Contains(head, want) || !regexp.MustCompile(`UTC \(\d+s ago\)`).MatchString(head) {
		t.Errorf("header %q: want %q and an age", head, want)
	}
	if id := strconv.FormatInt(c.SnapshotID, 10); strings.Contains(head, id) {
		t.Errorf("header %q shows the snapshot id %s", head, id)
	}

	plain := newViewFixture(t, func(s Source) Source { return noCommitTime{s} })
	before := time.Now().UTC().Truncate(time.Second)
	open(t, ctx, plain.srv.URL, "/")
	after := time.Now().UTC()
	head = evaluate[string](t, ctx, `document.querySelector("header").textContent`)
	m := regexp.MustCompile(`table read (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) UTC \(\d+s ago; the source has no commit time\)`).FindStringSubmatch(head)
	if m == nil {
		t.Fatalf("header %q: want the read's time", head)
	}
	if at, err := time.Parse(time.DateTime, m[1]); err != nil || at.Before(before) || at.After(after) {
		t.Errorf("header's read time %s, want one between %s and %s", m[1], before, after)
	}
}

// layout is what TestBrowserNoSidewaysScroll measures.
type layout struct {
	Doc, DocClient          float64
	Wide                    []string
	LastTh                  string
	LastRight, SectionRight float64
}

// At 1,280 and 1,920 px nothing scrolls sideways: neither the page nor a
// section, so the sinks table's last column (oldest gap) is in view.
func TestBrowserNoSidewaysScroll(t *testing.T) {
	f := newViewFixture(t, nil)
	ctx := browser(t)
	dir := t.TempDir()
	for _, width := range []int64{1280, 1920} {
		for _, path := range []string{"/", "/?topic=" + url.QueryEscape(oddTopic) + "&gaps=0"} {
			if err := chromedp.Do(ctx, chromedp.EmulateViewport(width, 900)); err != nil {
				t.Fatal(err)
			}
			open(t, ctx, f.srv.URL, path)
			waitFor(t, ctx, "the sinks", `document.querySelectorAll("#sinks tr").length === 5`)
			got := evaluate[layout](t, ctx, `(function () {
  var d = document.documentElement, th = Array.from(document.querySelectorAll("#sinks th")).pop();
  var wide = Array.from(document.querySelectorAll("section, main, header")).filter(function (s) { return s.scrollWidth > s.clientWidth; })
    .map(function (s) { return (s.id || s.tagName) + " " + s.scrollWidth + ">" + s.clientWidth; });
  return {Doc: d.scrollWidth, DocClient: d.clientWidth, Wide: wide, LastTh: th.textContent,
    LastRight: th.getBoundingClientRect().right, SectionRight: th.closest("section").getBoundingClientRect().right};
})()`)
			if got.Doc > got.DocClient {
				t.Errorf("%d px %s: the page scrolls sideways (scrollWidth %.0f > clientWidth %.0f)", width, path, got.Doc, got.DocClient)
			}
			if len(got.Wide) > 0 {
				t.Errorf("%d px %s: these scroll sideways: %v", width, path, got.Wide)
			}
			if got.LastTh != "oldest gap" || got.LastRight > got.SectionRight {
				t.Errorf("%d px %s: the sinks table's last column %q ends at %.0f px, its section at %.0f", width, path, got.LastTh, got.LastRight, got.SectionRight)
			}
			shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatalf("screenshot: %v", err)
			}
			name := filepath.Join(dir, "map-"+strconv.FormatInt(width, 10)+map[bool]string{true: "-aggregate", false: "-topic"}[path == "/"]+".png")
			if err := os.WriteFile(name, shot, 0o644); err != nil {
				t.Fatal(err)
			}
			img, err := png.Decode(bytes.NewReader(shot))
			if err != nil {
				t.Fatalf("%s does not decode: %v", name, err)
			}
			if w := img.Bounds().Dx(); int64(w) != width {
				t.Errorf("%s is %d px wide, want %d", name, w, width)
			}
		}
	}
}

// viewState is what the page shows of its controls and data.
type viewState struct {
	Sink, Topic       string // the filter boxes
	All               bool   // the box
	URLSink, URLTopic string // the query string's
	URLGaps           string
	Hash              string
	Bars              []drawnBar
}

const readView = `(function () {
  var q = new URLSearchParams(location.search);
  return {Sink: document.getElementById("fsink").value, Topic: document.getElementById("ftopic").value, All: document.getElementById("all").checked,
    URLSink: q.get("sink") || "", URLTopic: q.get("topic") || "", URLGaps: q.get("gaps") || "", Hash: location.hash,
    Bars: ` + readBars + `};
})()`

// Deep links: the query string and the hash alike open the view, every
// control is in the URL, a change of one rewrites it, and the URL opens
// the same view again; names round-trip byte for byte.
func TestBrowserDeepLinks(t *testing.T) {
	f := newViewFixture(t, nil)
	ctx := browser(t)
	view := func(what string) viewState {
		t.Helper()
		waitFor(t, ctx, what, `document.body.dataset.state === "ok" && document.querySelectorAll(".bar").length > 0`)
		return evaluate[viewState](t, ctx, readView)
	}
	// sinkBars checks that every sink bar is oddSink's, with its gap, and
	// counts them.
	sinkBars := func(what string, v viewState) int {
		t.Helper()
		n := 0
		for _, b := range v.Bars {
			if b.Kind != "sink" {
				continue
			}
			n++
			if b.Sink != oddSink {
				t.Errorf("%s: a bar of sink %q, want only %q", what, b.Sink, oddSink)
			}
			if b.Topic == oddTopic && b.Partition == "0" && b.Gaps != "40-100" {
				t.Errorf("%s: %q's gaps %q, want 40-100", what, b.Sink, b.Gaps)
			}
		}
		return n
	}
	sink := url.QueryEscape(oddSink)
	for _, path := range []string{"/?sink=" + sink, "/#sink=" + sink, "/?sink=" + sink + "&gaps=1", "/#gaps=1&sink=" + sink} {
		open(t, ctx, f.srv.URL, path)
		v := view(path)
		if v.Sink != oddSink || v.All {
			t.Errorf("%s: filter %q, box ticked %v; want %q, unticked", path, v.Sink, v.All, oddSink)
		}
		if n := sinkBars(path, v); n != 1 {
			t.Errorf("%s: %d sink bars, want 1 (oddTopic/0, the only one with a gap)", path, n)
		}
	}
	for _, path := range []string{"/?sink=" + sink + "&gaps=0", "/#sink=" + sink + "&gaps=0", "/#sink=" + sink + "&all=1"} {
		open(t, ctx, f.srv.URL, path)
		v := view(path)
		if v.Sink != oddSink || !v.All {
			t.Errorf("%s: filter %q, box ticked %v; want %q, ticked", path, v.Sink, v.All, oddSink)
		}
		if n := sinkBars(path, v); n != 3 {
			t.Errorf("%s: %d sink bars, want 3", path, n)
		}
	}

	// A change of a control rewrites the URL in place; the URL then opens
	// the same view.
	open(t, ctx, f.srv.URL, "/#sink="+sink)
	view("the sink")
	n := evaluate[int](t, ctx, `history.length`)
	evaluate[bool](t, ctx, `(document.getElementById("all").click(), document.getElementById("ftopic").value = `+jsString(oddTopic)+`, document.getElementById("apply").click(), true)`)
	waitFor(t, ctx, "the ticked view", `document.body.dataset.state === "ok" && new URLSearchParams(location.search).get("topic") === `+jsString(oddTopic)+` && document.querySelectorAll(".bar").length === 4`)
	v := evaluate[viewState](t, ctx, readView)
	if v.URLSink != oddSink || v.URLTopic != oddTopic || v.URLGaps != "0" || v.Hash != "" {
		t.Errorf("URL after the changes: sink %q topic %q gaps %q hash %q; want %q, %q, 0 and none", v.URLSink, v.URLTopic, v.URLGaps, v.Hash, oddSink, oddTopic)
	}
	if m := evaluate[int](t, ctx, `history.length`); m != n {
		t.Errorf("a control's change added %d history entries: it must replace the URL", m-n)
	}
	copied := evaluate[string](t, ctx, `location.href`)
	navigate(t, ctx, copied)
	again := view("the copied URL")
	if again.Sink != oddSink || again.Topic != oddTopic || !again.All || len(again.Bars) != len(v.Bars) {
		t.Errorf("the copied URL %s opens sink %q topic %q ticked %v with %d bars; want %q %q ticked with %d", copied, again.Sink, again.Topic, again.All, len(again.Bars), oddSink, oddTopic, len(v.Bars))
	}
	for i := range min(len(again.Bars), len(v.Bars)) {
		if a, b := again.Bars[i], v.Bars[i]; a.Sink != b.Sink || a.Topic != b.Topic || a.Partition != b.Partition || a.Gaps != b.Gaps {
			t.Errorf("bar %d: %q %q/%s gaps %q from the copied URL, %q %q/%s gaps %q before", i, a.Sink, a.Topic, a.Partition, a.Gaps, b.Sink, b.Topic, b.Partition, b.Gaps)
		}
	}
}

// Each destination with gaps links to its replay tasks: /v1/plan for
// exactly that sink, topic and partition, opened in the page.
func TestBrowserPlanLinks(t *testing.T) {
	f := newViewFixture(t, nil)
	ctx := browser(t)
	open(t, ctx, f.srv.URL, "/?gaps=0&topic="+url.QueryEscape(oddTopic))
	waitFor(t, ctx, "the bars", `document.querySelectorAll(".bar").length === 8`)
	type link struct{ Sink, Topic, Partition, Href string }
	links := evaluate[[]link](t, ctx, `Array.from(document.querySelectorAll("a[data-plan-sink]")).map(function (a) {
  var q = new URL(a.href).searchParams;
  return {Sink: q.get("sink"), Topic: q.get("topic"), Partition: q.get("partition"), Href: a.href};
})`)
	seen := map[string]bool{}
	for _, l := range links {
		want, ok := f.gaps[l.Sink]
		if !ok || want == "" || l.Topic != oddTopic || l.Partition != "0" {
			t.Errorf("a plan link for %q %q/%s: no gap there", l.Sink, l.Topic, l.Partition)
			continue
		}
		seen[l.Sink] = true
		// The link's target is the plan of that destination alone.
		resp, err := http.Get(l.Href)
		if err != nil {
			t.Fatal(err)
		}
		var direct []recovery.Gap
		err = json.NewDecoder(resp.Body).Decode(&direct)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %v", l.Href, resp.StatusCode, err)
		}
		if len(direct) != 1 || direct[0].Sink != l.Sink || direct[0].Topic != oddTopic || direct[0].Partition != 0 ||
			strconv.FormatUint(direct[0].Start, 10)+"-"+strconv.FormatUint(direct[0].End, 10) != want {
			t.Errorf("GET %s: %+v, want the one task %s of %q", l.Href, direct, want, l.Sink)
		}
		// Clicked, it opens in the page.
		q := jsString(l.Sink)
		if !evaluate[bool](t, ctx, `(function () { var a = Array.from(document.querySelectorAll("a[data-plan-sink]")).find(function (a) { return a.dataset.planSink === `+q+`; }); if (a) a.click(); return !!a; })()`) {
			t.Fatalf("no plan link of %q to click", l.Sink)
		}
		waitFor(t, ctx, "the plan", `document.getElementById("plan-box").dataset.state === "ok" && document.getElementById("plan-h").textContent.indexOf(`+q+`) > 0`)
		var shown []recovery.Gap
		if err := json.Unmarshal([]byte(evaluate[string](t, ctx, `document.getElementById("plan-out").textContent`)), &shown); err != nil {
			t.Fatalf("the plan shown for %q: %v", l.Sink, err)
		}
		if len(shown) != len(direct) || len(shown) == 1 && shown[0] != direct[0] {
			t.Errorf("the page shows %+v for %q, /v1/plan says %+v", shown, l.Sink, direct)
		}
	}
	for sink, gap := range f.gaps {
		if gap != "" && !seen[sink] {
			t.Errorf("no plan link for %q's gap %s", sink, gap)
		}
	}
	if e := evaluate[string](t, ctx, `document.body.dataset.jsError || ""`); e != "" {
		t.Errorf("script error: %s", e)
	}
}

// With the sidecar's token, a plan link (a plain navigation, which cannot
// send it) opens in the page with the token the page was given.
func TestBrowserPlanLinkWithToken(t *testing.T) {
	const token = "s3cret-plan-token"
	f := newViewFixture(t, nil, token)
	ctx := browser(t)
	navigate(t, ctx, f.srv.URL+"/?topic="+url.QueryEscape(oddTopic))
	waitFor(t, ctx, "the token form", `document.body.dataset.state === "token"`)
	evaluate[bool](t, ctx, `(document.getElementById("token").value = "`+token+`", document.getElementById("auth-go").click(), true)`)
	waitFor(t, ctx, "the bars", `document.body.dataset.state === "ok" && document.querySelectorAll("a[data-plan-sink]").length === 2`)
	href := evaluate[string](t, ctx, `document.querySelector("a[data-plan-sink]").href`)
	resp, err := http.Get(href)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("GET %s without the token: %d, want 401", href, resp.StatusCode)
	}
	evaluate[bool](t, ctx, `(document.querySelector("a[data-plan-sink]").click(), true)`)
	waitFor(t, ctx, "the plan", `document.getElementById("plan-box").className === "on" && ["ok", "error"].indexOf(document.getElementById("plan-box").dataset.state) >= 0`)
	var shown []recovery.Gap
	out := evaluate[string](t, ctx, `document.getElementById("plan-out").textContent`)
	if err := json.Unmarshal([]byte(out), &shown); err != nil || len(shown) != 1 || f.gaps[shown[0].Sink] != strconv.FormatUint(shown[0].Start, 10)+"-"+strconv.FormatUint(shown[0].End, 10) {
		t.Errorf("the plan shown with the token: %q (%v)", out, err)
	}
}

// A drill-down is a step of the history: Back returns to the aggregate.
func TestBrowserDrillDownBack(t *testing.T) {
	f := newViewFixture(t, nil)
	ctx := browser(t)
	open(t, ctx, f.srv.URL, "/")
	q := jsString(oddSink)
	if !evaluate[bool](t, ctx, `(function () { var r = Array.from(document.querySelectorAll("tr[data-sink]")).find(function (r) { return r.dataset.sink === `+q+`; }); if (r) r.click(); return !!r; })()`) {
		t.Fatalf("no row of sink %q", oddSink)
	}
	waitFor(t, ctx, "the sink's bars", `document.body.dataset.state === "ok" && new URLSearchParams(location.search).get("sink") === `+q+` && document.querySelectorAll(".bar[data-kind=sink]").length === 1`)
	evaluate[bool](t, ctx, `(document.body.dataset.state = "stale", history.back(), true)`)
	waitFor(t, ctx, "the aggregate again", `document.body.dataset.state === "ok" && location.search === "" && document.querySelectorAll(".bar").length === 0`)
	if v := evaluate[viewState](t, ctx, readView); v.Sink != "" || v.All {
		t.Errorf("after Back: filter %q, box ticked %v; want the aggregate's", v.Sink, v.All)
	}
}
