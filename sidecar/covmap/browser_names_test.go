package covmap

import (
	"context"
	"net/http/httptest"
	"net/url"
	"strconv"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
)

// spacedTopics are three topics a trim would confuse, and the gap lake has
// on each (partition 0; raw holds [0,100) of each).
var spacedTopics = map[string]string{"orders": "", "orders ": "40-100", " orders": "70-100"}

// spacedHandler is a map over spacedTopics, committed.
func spacedHandler(t *testing.T) *httptest.Server {
	t.Helper()
	return namesHandler(t, map[string]uint64{"orders": 100, "orders ": 40, " orders": 70})
}

// namesHandler is a map over the topics of lakeEnd, committed: raw holds
// [0,100) of each, lake [0,end).
func namesHandler(t *testing.T, lakeEnd map[string]uint64) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	table := tabletest.EmbeddedTable(t)
	store, err := local.Open(local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := mirror.New(mirror.Options{Local: store, Durable: table, Writer: "pod-a"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	for topic, end := range lakeEnd {
		for sink, r := range map[string]coverage.Range{"raw": {Start: 0, End: 100}, "lake": {Start: 0, End: end}} {
			if err := m.Record(ctx, coverage.Destination{Sink: sink, Topic: topic}, r); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	handler, err := Handler(Options{Source: TableSource{Table: table}, CacheFor: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	return srv
}

// TestDataNamesAreExact: the data endpoint's sink and topic parameters
// mean their exact bytes: "orders " is not "orders".
func TestDataNamesAreExact(t *testing.T) {
	srv := spacedHandler(t)
	for topic, gap := range spacedTopics {
		v, _ := getMap(t, srv.URL+"/v1/map?gaps=0&topic="+url.QueryEscape(topic))
		if v.Topic != topic {
			t.Errorf("topic=%q answered the map of topic %q", topic, v.Topic)
		}
		var gaps []string
		for _, p := range v.Partitions {
			if p.Topic != topic {
				t.Errorf("topic=%q: a partition of topic %q", topic, p.Topic)
			}
			for _, b := range p.Bars {
				if b.Sink == "lake" {
					gaps = append(gaps, b.Gaps)
				}
			}
		}
		if len(gaps) != 1 || gaps[0] != gap {
			t.Errorf("topic=%q: lake's gaps %q, want [%q]", topic, gaps, gap)
		}
	}
}

// TestBrowserDrillsIntoSpacedNames: in a real browser, clicking topic
// "orders " in the aggregate, or typing " orders" in the filter, shows that
// topic's partitions and gaps, not those of "orders".
func TestBrowserDrillsIntoSpacedNames(t *testing.T) {
	srv := spacedHandler(t)
	ctx := browser(t)
	for topic, gap := range spacedTopics {
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/#all=1")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the topics", `document.body.dataset.state === "ok" && document.querySelectorAll("tr[data-topic]").length === 3`)
		q := jsString(topic)
		if topic == " orders" {
			// typed in the filter, its space kept
			evaluate[bool](t, ctx, `(document.getElementById("ftopic").value = `+q+`, document.getElementById("apply").click(), true)`)
		} else {
			evaluate[bool](t, ctx, `(Array.from(document.querySelectorAll("tr[data-topic]")).find(function (r) { return r.dataset.topic === `+q+`; }).click(), true)`)
		}
		waitFor(t, ctx, "the topic's bars", `document.body.dataset.state === "ok" && document.querySelectorAll(".bar[data-sink=lake]").length === 1 && new URLSearchParams(location.search).get("topic") === `+q)
		bars := evaluate[[]drawnBar](t, ctx, readBars)
		for _, b := range bars {
			if b.Topic != topic {
				t.Errorf("drilled into %q: a bar of topic %q", topic, b.Topic)
			}
			if b.Sink == "lake" && b.Gaps != gap {
				t.Errorf("drilled into %q: lake's gaps drawn %q, want %q", topic, b.Gaps, gap)
			}
		}
	}
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	q := `"`
	for _, r := range s {
		switch r {
		case '"', '\\':
			q += `\` + string(r)
		default:
			q += string(r)
		}
	}
	return q + `"`
}

// TestBrowserDrillsIntoLineBreakNames: a topic may hold a CR (only NUL is
// refused); written raw in an attribute, the HTML parser would read
// "orders\r" as "orders\n", and a click on the one would show the other's
// gaps. Each row is found by its exact name and drills into it.
func TestBrowserDrillsIntoLineBreakNames(t *testing.T) {
	gaps := map[string]string{"orders\r": "40-100", "orders\n": "70-100", "orders\r\n": "20-100"}
	srv := namesHandler(t, map[string]uint64{"orders\r": 40, "orders\n": 70, "orders\r\n": 20})
	ctx := browser(t)
	for topic, gap := range gaps {
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/#all=1")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the topics", `document.body.dataset.state === "ok" && document.querySelectorAll("tr[data-topic]").length === 3`)
		q := strconv.Quote(topic) // a JavaScript string literal too: ASCII escapes only
		if !evaluate[bool](t, ctx, `(function () { var r = Array.from(document.querySelectorAll("tr[data-topic]")).find(function (r) { return r.dataset.topic === `+q+`; }); if (r) r.click(); return !!r; })()`) {
			t.Fatalf("no row is topic %q: its name was changed in the page", topic)
		}
		waitFor(t, ctx, "the topic's bars", `document.body.dataset.state === "ok" && document.querySelectorAll(".bar[data-sink=lake]").length === 1 && new URLSearchParams(location.search).get("topic") === `+q)
		for _, b := range evaluate[[]drawnBar](t, ctx, readBars) {
			if b.Topic != topic {
				t.Errorf("drilled into %q: a bar of topic %q", topic, b.Topic)
			}
			if b.Sink == "lake" && b.Gaps != gap {
				t.Errorf("drilled into %q: lake's gaps drawn %q, want %q", topic, b.Gaps, gap)
			}
		}
	}
}
