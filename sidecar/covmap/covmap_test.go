package covmap

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
)

// history is a known coverage history on a real local tier and a real
// embedded coverage table: some of it checkpointed, some pending, with a
// hole in raw.
type history struct {
	source  Source
	pending PendingSource
	// firstCheckpoint brackets the first checkpoint's recorded_at.
	before, after time.Time
}

// Expected drawn ranges per bar: sink/topic/partition -> "start-end ...".
var (
	wantGaps = map[string]string{
		"raw/orders/1":  "50-70", // the hole: raw lost its record; wh holds 50-60
		"lake/orders/0": "40-60",
		"lake/orders/1": "70-120",
		"wh/orders/0":   "0-100", // wh never wrote partition 0
		"wh/orders/1":   "0-50 70-120",
		"raw/orders/0":  "",
	}
	wantPending = map[string]string{
		"raw/orders/0":  "100-130",
		"lake/orders/0": "100-110",
		"lake/orders/1": "",
		"raw/orders/1":  "",
		"wh/orders/1":   "",
	}
)

func rec(t *testing.T, m *mirror.Mirror, sink string, part int32, start, end uint64) {
	t.Helper()
	d := coverage.Destination{Sink: sink, Topic: "orders", Partition: part}
	if err := m.Record(context.Background(), d, coverage.Range{Start: start, End: end}); err != nil {
		t.Fatalf("record %s [%d,%d): %v", d, start, end, err)
	}
}

func newHistory(t *testing.T) *history {
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
	h := &history{source: TableSource{Table: table}, pending: LocalPending{Store: store}}
	rec(t, m, "raw", 0, 0, 100)
	rec(t, m, "raw", 1, 0, 50)
	rec(t, m, "raw", 1, 70, 120)
	h.before = time.Now()
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	h.after = time.Now()
	rec(t, m, "lake", 0, 0, 40)
	rec(t, m, "lake", 0, 60, 100)
	rec(t, m, "lake", 1, 0, 50)
	rec(t, m, "wh", 1, 50, 60)
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	// Pending: recorded after the last checkpoint.
	rec(t, m, "raw", 0, 100, 130)
	rec(t, m, "lake", 0, 100, 110)
	return h
}

func getMap(t *testing.T, url string) (mapView, int) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var v mapView
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("%s: %v: %s", url, err, body)
		}
	}
	return v, len(body)
}

func TestMapDataMatchesHistory(t *testing.T) {
	h := newHistory(t)
	handler, err := Handler(Options{Source: h.source, Pending: h.pending})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()

	v, _ := getMap(t, srv.URL+"/v1/map?topic=orders&gaps=0")
	if v.Reference != "raw" || !v.PendingKnown || len(v.Partitions) != 2 {
		t.Fatalf("map: reference %q, pending known %v, %d partitions", v.Reference, v.PendingKnown, len(v.Partitions))
	}
	seen := map[string]bool{}
	for _, p := range v.Partitions {
		for _, b := range p.Bars {
			key := b.Sink + "/" + p.Topic + "/" + itoa(p.Partition)
			seen[key] = true
			if want, ok := wantGaps[key]; ok && b.Gaps != want {
				t.Errorf("%s: gaps %q, want %q", key, b.Gaps, want)
			}
			if want, ok := wantPending[key]; ok && b.Pending != want {
				t.Errorf("%s: pending %q, want %q", key, b.Pending, want)
			}
		}
	}
	for key := range wantGaps {
		if !seen[key] {
			t.Errorf("%s: no bar", key)
		}
	}
	// Extent of partition 0: raw's committed [0,100) widened by its pending.
	if p := v.Partitions[0]; p.Start != "0" || p.End != "130" {
		t.Errorf("orders/0 extent [%s,%s), want [0,130)", p.Start, p.End)
	}
	// Ages: lake's gap on orders/0 dates from raw's first checkpoint; the
	// hole from wh's row (the second checkpoint).
	for _, s := range v.Sinks {
		if s.Sink == "lake" {
			if s.OldestGapSince == nil || s.OldestGapSince.Before(h.before.Add(-time.Second)) || s.OldestGapSince.After(h.after.Add(time.Second)) {
				t.Errorf("lake's oldest gap since %v, want within the first checkpoint [%v, %v]", s.OldestGapSince, h.before, h.after)
			}
			if s.MissingBatches != 20+50 {
				t.Errorf("lake misses %d batches, want 70", s.MissingBatches)
			}
		}
		if s.Sink == "raw" && (s.OldestGapSince == nil || !s.OldestGapSince.After(h.after.Add(-time.Second))) {
			t.Errorf("raw's hole since %v, want the second checkpoint (after %v)", s.OldestGapSince, h.after)
		}
	}
	if v.Totals.PendingBatches != 40 || v.Totals.MissingBatches != 20+20+50+100+100 {
		t.Errorf("totals %+v", v.Totals)
	}
	// Only-gaps default with a sink filter: wh's partitions, each with the
	// reference's bar first.
	v, _ = getMap(t, srv.URL+"/v1/map?sink=wh")
	if len(v.Partitions) != 2 || v.Partitions[0].Bars[0].Sink != "raw" || v.Partitions[0].Bars[1].Sink != "wh" || len(v.Partitions[0].Bars) != 2 {
		t.Fatalf("sink=wh: %+v", v.Partitions)
	}
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }

// failing is a Source that fails while fail is set.
type failing struct {
	Source
	fail atomic.Bool
}

func (f *failing) Committed(ctx context.Context) (Committed, error) {
	if f.fail.Load() {
		return Committed{}, errors.New("catalog unreachable (injected)")
	}
	return f.Source.Committed(ctx)
}

// A failed read of the table is a 503 with the error, never a map without
// gaps; the cache never stands in for it.
func TestMapFailedReadIsAnError(t *testing.T) {
	h := newHistory(t)
	src := &failing{Source: h.source}
	handler, err := Handler(Options{Source: src, Pending: h.pending, CacheFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(handler)
	defer srv.Close()
	if v, _ := getMap(t, srv.URL+"/v1/map"); v.Totals.Gaps == 0 {
		t.Fatalf("no gaps in %+v", v)
	}
	src.fail.Store(true)
	resp, err := http.Get(srv.URL + "/v1/map")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The cache still holds the good read: within CacheFor it is served.
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("cached read: status %d: %s", resp.StatusCode, body)
	}
	handler, _ = Handler(Options{Source: src, CacheFor: -1})
	srv2 := httptest.NewServer(handler)
	defer srv2.Close()
	resp, err = http.Get(srv2.URL + "/v1/map")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "injected") {
		t.Fatalf("failed read: status %d: %s", resp.StatusCode, body)
	}
}

func TestOptions(t *testing.T) {
	if _, err := Handler(Options{}); err == nil || !strings.Contains(err.Error(), "Source") {
		t.Fatalf("no source: %v", err)
	}
	o := Options{Source: TableSource{}}
	o.EnsureDefaults()
	if o.Refresh != 10*time.Second || o.CacheFor != 5*time.Second || o.MaxRows != 200 || o.Logger == nil || o.Validate() != nil {
		t.Fatalf("defaults: %+v", o)
	}
	o.Refresh = time.Millisecond
	if o.Validate() == nil {
		t.Fatal("a 1ms refresh is accepted")
	}
}
