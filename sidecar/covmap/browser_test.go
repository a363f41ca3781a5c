package covmap

import (
	"context"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/covmirror/covmirror/internal/browsertest"
)

// browser starts headless Chromium for one test.
func browser(t *testing.T) context.Context { return browsertest.Start(t) }

// screenshot saves a PNG of the whole page where it outlives the test and
// logs its path.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	dir := filepath.Join(os.TempDir(), "covmirror-map-screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

// waitFor polls a JavaScript predicate.
func waitFor(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(wctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("error").textContent + " | js: " + (document.body.dataset.jsError || "")`))
		t.Fatalf("waiting for %s: %v (page says: %q)", what, err, msg)
	}
}

func evaluate[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

type drawnBar struct {
	Sink, Topic, Partition, Kind string
	Gaps, Pending                string
	// Segments are the drawn divs: class, range and left/width in percent.
	Segments []drawnSeg
	Color    map[string]string
}

type drawnSeg struct {
	Class, Range string
	Left, Width  float64
	Background   string
}

const readBars = `Array.from(document.querySelectorAll(".bar")).map(function (b) {
  return {Sink: b.dataset.sink, Topic: b.dataset.topic, Partition: b.dataset.partition, Kind: b.dataset.kind,
    Gaps: b.dataset.gaps, Pending: b.dataset.pending,
    Segments: Array.from(b.querySelectorAll(".seg")).map(function (s) {
      var cs = getComputedStyle(s);
      return {Class: s.className.replace("seg ", ""), Range: s.dataset.range,
        Left: parseFloat(s.style.left), Width: parseFloat(s.style.width), Background: cs.backgroundColor + " " + cs.backgroundImage};
    })};
})`

// The page draws exactly the known gaps, the raw hole and the pending
// ranges, pending distinct from gaps, and says so clearly when the data
// endpoint fails.
func TestBrowserDrawsKnownMap(t *testing.T) {
	h := newHistory(t)
	src := &failing{Source: h.source}
	handler, err := Handler(Options{Source: src, Pending: h.pending, Refresh: time.Second, CacheFor: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()
	ctx := browser(t)

	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/#topic=orders&all=1")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the partition bars", `document.body.dataset.state === "ok" && document.querySelectorAll(".bar").length > 0`)
	bars := evaluate[[]drawnBar](t, ctx, readBars)
	seen := map[string]bool{}
	colors := map[string]string{}
	for _, b := range bars {
		key := b.Sink + "/" + b.Topic + "/" + b.Partition
		seen[key] = true
		if want, ok := wantGaps[key]; ok && b.Gaps != want {
			t.Errorf("%s: drawn gaps %q, want %q", key, b.Gaps, want)
		}
		if want, ok := wantPending[key]; ok && b.Pending != want {
			t.Errorf("%s: drawn pending %q, want %q", key, b.Pending, want)
		}
		// Each gap and pending range is a drawn segment at its place on
		// the partition's extent ([0,130) on partition 0, [0,120) on 1).
		extent := map[string]float64{"0": 130, "1": 120}[b.Partition]
		drawn := map[string][]string{}
		for _, s := range b.Segments {
			drawn[s.Class] = append(drawn[s.Class], s.Range)
			colors[s.Class] = s.Background
			start, end := parseRange(t, s.Range)
			if math.Abs(s.Left-100*start/extent) > 0.01 || math.Abs(s.Width-100*(end-start)/extent) > 0.01 {
				t.Errorf("%s: %s segment %s drawn at left %.3f%% width %.3f%%", key, s.Class, s.Range, s.Left, s.Width)
			}
		}
		gapClass := "g"
		if b.Sink == "raw" {
			gapClass = "h"
		}
		if got := strings.Join(drawn[gapClass], " "); got != b.Gaps {
			t.Errorf("%s: gap segments %q, data says %q", key, got, b.Gaps)
		}
		if got := strings.Join(drawn["p"], " "); got != b.Pending {
			t.Errorf("%s: pending segments %q, data says %q", key, got, b.Pending)
		}
	}
	for key := range wantGaps {
		if !seen[key] {
			t.Errorf("%s: no bar drawn", key)
		}
	}
	if colors["p"] == "" || colors["p"] == colors["g"] || colors["p"] == colors["h"] || colors["g"] == colors["h"] || colors["c"] == colors["g"] {
		t.Errorf("segment colours are not distinct: %v", colors)
	}
	if age := evaluate[string](t, ctx, `document.querySelectorAll(".card")[4].querySelector(".n").textContent`); !strings.HasSuffix(age, "s") {
		t.Errorf("oldest gap's age %q", age)
	}
	renderMs := evaluate[string](t, ctx, `document.body.dataset.renderMs`)
	t.Logf("known map: %d bars drawn in %s ms", len(bars), renderMs)
	screenshot(t, ctx, "map-orders.png")

	// The aggregate view.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the aggregate", `document.body.dataset.state === "ok" && document.querySelectorAll("#sinks tr").length === 4`)
	screenshot(t, ctx, "map-aggregate.png")

	// A failing data endpoint: a clear message, the last map kept.
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/#sink=lake")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "lake's bars", `document.body.dataset.state === "ok" && document.querySelectorAll(".bar[data-sink=lake]").length === 2`)
	src.fail.Store(true)
	waitFor(t, ctx, "the failure message", `document.body.dataset.state === "error"`)
	msg := evaluate[string](t, ctx, `document.getElementById("error").textContent`)
	if !strings.Contains(msg, "Refresh failed") || !strings.Contains(msg, "injected") || !strings.Contains(msg, "may be out of date") {
		t.Errorf("failure message %q", msg)
	}
	if n := evaluate[int](t, ctx, `document.querySelectorAll(".bar").length`); n == 0 {
		t.Error("the last map was dropped on a failed refresh")
	}
	screenshot(t, ctx, "map-error.png")
	src.fail.Store(false)
	waitFor(t, ctx, "recovery", `document.body.dataset.state === "ok" && !document.getElementById("error").textContent`)
	if e := evaluate[string](t, ctx, `document.body.dataset.jsError || ""`); e != "" {
		t.Errorf("script error: %s", e)
	}
}

func parseRange(t *testing.T, s string) (float64, float64) {
	t.Helper()
	a, b, ok := strings.Cut(s, "-")
	start, err1 := strconv.ParseFloat(a, 64)
	end, err2 := strconv.ParseFloat(b, 64)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("drawn range %q", s)
	}
	return start, end
}
