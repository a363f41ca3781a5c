package covmap

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/sidecar"
)

// The map mounts on the sidecar through Options.Extra, as covmirror serve
// mounts it, beside the sidecar's own routes.
func TestMountsOnSidecar(t *testing.T) {
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
	if err := m.Record(context.Background(), coverage.Destination{Sink: "raw", Topic: "t", Partition: 0}, coverage.Range{Start: 0, End: 5}); err != nil {
		t.Fatal(err)
	}
	h, err := Handler(Options{Source: TableSource{Table: table}, Pending: LocalPending{Store: store}})
	if err != nil {
		t.Fatal(err)
	}
	sc, err := sidecar.New(sidecar.Options{Mirror: m, Local: store, Durable: table,
		Extra: map[string]http.Handler{"GET /{$}": h, "GET /v1/map": h}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sc.Handler())
	defer srv.Close()
	if page := string(getBody(t, srv.URL+"/")); !strings.Contains(page, "covmirror coverage map") {
		t.Fatalf("GET /: %.200s", page)
	}
	v, _ := getMap(t, srv.URL+"/v1/map?topic=t")
	if v.Totals.PendingBatches != 5 || len(v.Partitions) != 1 || v.Partitions[0].Bars[0].Pending != "0-5" {
		t.Fatalf("GET /v1/map: %+v", v)
	}
	resp, err := http.Get(srv.URL + "/v1/gaps")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the sidecar's own /v1/gaps: %d", resp.StatusCode)
	}
}
