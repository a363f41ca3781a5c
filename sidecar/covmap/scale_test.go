package covmap

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// largeTable commits 10,000 destinations in one checkpoint: raw and nine
// sinks over 20 topics of 50 partitions. Each sink lacks a random inner
// range of some partitions and a few whole partitions; the expected missing
// batches per sink are returned.
func largeTable(t *testing.T, seed uint64) (*iceberg.Table, map[string]uint64, int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const topics, partitions, end = 20, 50, 1_000_000
	sinks := []string{"raw", "lake", "wh", "search", "archive", "audit", "ml", "cold", "replica", "stream"}
	want := map[string]uint64{}
	var ranges []coverage.DestinationRanges
	dests := 0
	for _, sink := range sinks {
		for tp := range topics {
			for p := range partitions {
				d := coverage.Destination{Sink: sink, Topic: fmt.Sprintf("topic-%02d", tp), Partition: int32(p)}
				dests++
				switch {
				case sink == "raw":
					ranges = append(ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: 0, End: end}}})
				case rng.IntN(100) == 0: // never written: one whole gap
					want[sink] += end
				case rng.IntN(10) == 0: // an inner gap
					a := 1 + rng.Uint64N(end-2)
					b := a + 1 + rng.Uint64N(end-1-a)
					want[sink] += b - a
					ranges = append(ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: 0, End: a}, {Start: b, End: end}}})
				default:
					ranges = append(ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: 0, End: end}}})
				}
			}
		}
	}
	table := tabletest.EmbeddedTable(t)
	if err := table.Append(context.Background(), durable.Checkpoint{Name: "generated-1", Writer: "test", Ranges: ranges}); err != nil {
		t.Fatal(err)
	}
	return table, want, dests
}

// With 10,000 destinations the aggregate stays small, the totals match the
// generated gaps, a zoom is capped, and the page renders both.
func TestMapAtTenThousandDestinations(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: a map of 10,000 destinations; make test-slow runs it")
	}
	seed := testseed.Seed(t)
	table, want, dests := largeTable(t, seed)
	handler, err := Handler(Options{Source: TableSource{Table: table}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()

	start := time.Now()
	v, size := getMap(t, srv.URL+"/v1/map")
	t.Logf("%d destinations: /v1/map aggregate %d bytes, first read %s", dests, size, time.Since(start).Round(time.Millisecond))
	if v.Totals.Destinations != dests {
		t.Errorf("totals count %d destinations of %d", v.Totals.Destinations, dests)
	}
	for _, s := range v.Sinks {
		if s.Sink != "raw" && s.MissingBatches != want[s.Sink] {
			t.Errorf("seed %d: sink %s misses %d batches, want %d", seed, s.Sink, s.MissingBatches, want[s.Sink])
		}
	}
	if len(v.Sinks) != 10 || len(v.Topics) != 20 || len(v.Partitions) != 0 {
		t.Errorf("aggregate: %d sinks, %d topics, %d partitions", len(v.Sinks), len(v.Topics), len(v.Partitions))
	}
	if size > 16<<10 {
		t.Errorf("aggregate of %d destinations is %d bytes, want at most 16 KiB", dests, size)
	}
	zoom, zsize := getMap(t, srv.URL+"/v1/map?sink=lake&gaps=0")
	t.Logf("zoom into sink lake: %d of %d partitions, %d bytes", len(zoom.Partitions), zoom.PartitionsTotal, zsize)
	if len(zoom.Partitions) != 200 || zoom.PartitionsTotal != 1000 {
		t.Errorf("zoom: %d of %d partitions, want 200 of 1000", len(zoom.Partitions), zoom.PartitionsTotal)
	}
	page := getBody(t, srv.URL+"/")
	t.Logf("page: %d bytes", len(page))

	ctx := browser(t)
	for _, view := range []struct{ name, hash, ready, png string }{
		{"aggregate", "", `document.querySelectorAll("#sinks tr").length === 11 && document.querySelectorAll("#topics tr").length === 21`, "map-10000-aggregate.png"},
		{"sink lake, all partitions", "#sink=lake&all=1", `document.querySelectorAll(".bar").length === 400`, "map-10000-lake.png"},
	} {
		start := time.Now()
		if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"+view.hash)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, view.name, `document.body.dataset.state === "ok" && `+view.ready)
		t.Logf("%s: rendered in %s ms (page load to drawn: %s)", view.name,
			evaluate[string](t, ctx, `document.body.dataset.renderMs`), time.Since(start).Round(time.Millisecond))
		if e := evaluate[string](t, ctx, `document.body.dataset.jsError || ""`); e != "" {
			t.Errorf("%s: script error: %s", view.name, e)
		}
		screenshot(t, ctx, view.png)
	}
}

func getBody(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
