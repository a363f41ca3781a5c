package covmap

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/recovery"
)

// events is a StateStore of given events, as a tier returns them.
type events []gapstate.Event

func (e events) AppendStates(context.Context, []gapstate.Event) error { return nil }
func (e events) States(_ context.Context, f durable.Filter) ([]gapstate.Event, error) {
	var out []gapstate.Event
	for _, x := range e {
		if f.Match(x.Destination) {
			out = append(out, x)
		}
	}
	return out, nil
}

// hostile is a reason and a decider an operator or a sink's error could
// hold: markup and script that must stay text on the page.
const (
	hostileReason = `</td></tr></table><img src=x onerror="document.body.dataset.pwned='img'"><script>document.body.dataset.pwned='script'</script>"'&amp;` + "\nline two"
	hostileBy     = `<b onmouseover="document.body.dataset.pwned='by'">ops</b>`
)

// TestTableSourceHeldKinds: over a real table, gaps in a state come with
// their kind and decision, split from the replayable ones exactly where
// the states lie, raw's unrecoverable range applies to the sink, coverage
// wins over a state, and the map's data carries them.
func TestTableSourceHeldKinds(t *testing.T) {
	tbl := tabletest.EmbeddedTable(t)
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	if err := tbl.Append(context.Background(), durable.Checkpoint{Name: "c1", Writer: "test", Ranges: []coverage.DestinationRanges{
		{Destination: d.WithSink("raw"), Ranges: []coverage.Range{{Start: 0, End: 100}}},
		{Destination: d, Ranges: []coverage.Range{{Start: 0, End: 10}, {Start: 50, End: 55}}},
	}}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	ev := func(id string, dest coverage.Destination, start, end uint64, st gapstate.State, reason string) gapstate.Event {
		return gapstate.Event{ID: id, Destination: dest, Range: coverage.Range{Start: start, End: end}, State: st, Reason: reason, By: hostileBy, At: at}
	}
	src := TableSource{Table: tbl, States: events{
		ev("a", d, 20, 30, gapstate.Refused, hostileReason),
		ev("b", d.WithSink("raw"), 40, 60, gapstate.Unrecoverable, "raw expired it"), // 50-55 covered: coverage wins
		ev("c", d, 70, 80, gapstate.Waived, "accepted"),
	}}
	c, err := src.Committed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, g := range c.Gaps {
		s := g.Destination.Sink + " " + g.Range.String() + " " + string(g.Kind)
		if g.Decision != nil {
			s += " " + g.Decision.Event
		}
		got = append(got, s)
	}
	want := []string{"lake [10,20) replay", "lake [20,30) refused a", "lake [30,40) replay", "lake [40,50) unrecoverable b",
		"lake [55,60) unrecoverable b", "lake [60,70) replay", "lake [70,80) waived c", "lake [80,100) replay"}
	if !slices.Equal(got, want) {
		t.Fatalf("gaps\n%v\nwant\n%v", got, want)
	}
	if g := c.Gaps[1]; g.Decision.Reason != hostileReason || g.Decision.By != hostileBy || !g.Decision.At.Equal(at) || g.Since == nil {
		t.Errorf("refused gap's decision %+v, since %v", g.Decision, g.Since)
	}

	v := build(index(&c, nil), c.Reference, query{sink: "lake"}, &Options{MaxRows: 10, MaxRanges: 10})
	tot := v.Totals
	if tot.MissingBatches != 85 || tot.RefusedBatches != 10 || tot.UnrecoverableBatches != 15 || tot.WaivedBatches != 10 || tot.Gaps != 8 {
		t.Errorf("totals %+v: want 85 missing (a state never makes a gap smaller), 10 refused, 15 unrecoverable, 10 waived, 8 gaps", tot)
	}
	bar := v.Partitions[0].Bars[1]
	if bar.Sink != "lake" || bar.Gaps != "10-20 30-40 60-70 80-100" || len(bar.Held) != 4 || bar.Held[0].Kind != "refused" || bar.Held[0].Reason != hostileReason {
		t.Errorf("lake's bar %+v", bar)
	}
}

// TestBrowserHeldGapsInert: the page draws each held kind in its own
// colour with a legend entry, lists the held gaps with kind and decision,
// and a reason or decider holding markup and script is shown as text,
// quoted, and runs nothing.
func TestBrowserHeldGapsInert(t *testing.T) {
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	dec := func(id, reason string) *recovery.Decision {
		return &recovery.Decision{Event: id, Reason: reason, By: hostileBy, At: at}
	}
	raw, _ := coverage.NewRangeSet(coverage.Range{Start: 0, End: 100})
	lake, _ := coverage.NewRangeSet(coverage.Range{Start: 0, End: 10})
	src := fixed{committed: Committed{Reference: "raw", Covered: map[coverage.Destination]*coverage.RangeSet{d.WithSink("raw"): &raw, d: &lake},
		Gaps: []Gap{
			{Destination: d, Range: coverage.Range{Start: 10, End: 20}, Kind: recovery.KindReplay},
			{Destination: d, Range: coverage.Range{Start: 20, End: 40}, Kind: recovery.KindRefused, Decision: dec("a", hostileReason)},
			{Destination: d, Range: coverage.Range{Start: 40, End: 60}, Kind: recovery.KindUnrecoverable, Decision: dec("b", "raw expired it")},
			{Destination: d, Range: coverage.Range{Start: 60, End: 100}, Kind: recovery.KindWaived, Decision: dec("c", "accepted")},
		}}}
	handler, err := Handler(Options{Source: src, CacheFor: -1})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()
	ctx := browser(t)
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/#sink=lake")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the held gaps", `document.body.dataset.state === "ok" && document.querySelectorAll("tr.held-gap").length === 3`)
	type row struct{ Kind, Range, Reason, By string }
	rows := evaluate[[]row](t, ctx, `Array.from(document.querySelectorAll("tr.held-gap")).map(function (r) {
  return {Kind: r.dataset.kind, Range: r.dataset.range, Reason: r.querySelector(".reason").textContent, By: r.cells[3].textContent};
})`)
	var quoted strings.Builder // as JSON.stringify quotes it: markup unescaped
	enc := json.NewEncoder(&quoted)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(hostileReason)
	wantRows := []row{{"refused", "20-40", strings.TrimSuffix(quoted.String(), "\n"), hostileBy}, {"unrecoverable", "40-60", `"raw expired it"`, hostileBy}, {"waived", "60-100", `"accepted"`, hostileBy}}
	if !slices.Equal(rows, wantRows) {
		t.Errorf("held rows\n%+v\nwant\n%+v", rows, wantRows)
	}
	if got := evaluate[string](t, ctx, `(document.body.dataset.pwned || "") + "|" + document.querySelectorAll("main img, main script, main b[onmouseover]").length + "|" + (document.body.dataset.jsError || "")`); got != "|0|" {
		t.Errorf("hostile text was run or parsed as markup: pwned|elements|error = %q", got)
	}
	bars := evaluate[[]drawnBar](t, ctx, readBars)
	colors := map[string]string{}
	for _, b := range bars {
		for _, s := range b.Segments {
			colors[s.Class] = s.Background
		}
	}
	seen := map[string]string{}
	for _, class := range []string{"g", "r", "u", "w"} {
		c := colors[class]
		if c == "" || seen[c] != "" {
			t.Errorf("segment class %q colour %q (colours %v): want one of its own", class, c, colors)
		}
		seen[c] = class
	}
	legend := evaluate[string](t, ctx, `document.querySelector(".legend").textContent`)
	for _, word := range []string{"refused", "unrecoverable", "waived"} {
		if !strings.Contains(legend, word) {
			t.Errorf("legend %q has no entry for %s", legend, word)
		}
	}
	screenshot(t, ctx, "map-held.png")
}
