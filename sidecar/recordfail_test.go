package sidecar

import (
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"
	dto "github.com/prometheus/client_model/go"

	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
)

// TestFailedWriteRecordsNone: a request whose entries' write to the local
// tier fails (a syncing store on a disk that refuses writes) is 503 with
// recorded 0, and neither the API's counter nor the Mirror's Stats count
// its entries: the client retries them all, and a crash now loses them, so
// any other count would claim records that are gone.
func TestFailedWriteRecordsNone(t *testing.T) {
	var fail atomic.Bool
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		if fail.Load() && op.Kind.ReadOrWrite() == errorfs.OpIsWrite {
			return errorfs.ErrInjected
		}
		return nil
	}))
	l, err := local.Open(local.Options{Dir: "/store", FS: fs, Sync: true, CommitDelay: -1})
	if err != nil {
		t.Fatal(err)
	}
	table := tabletest.EmbeddedTable(t)
	m, err := mirror.New(mirror.Options{Local: l, Durable: table, Writer: "pod-a", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = m.Close() }()
	srv, err := New(Options{Mirror: m, Local: l, Durable: table})
	if err != nil {
		t.Fatal(err)
	}
	p := &pod{local: l, table: table, mirror: m, srv: srv, h: srv.Handler()}
	rng := rand.New(rand.NewPCG(7, 7))
	if a := p.do(t, "POST", "/v1/records", "", marshal(t, randomEntries(rng, 4))); a.code != 200 || a.body["recorded"] != float64(4) {
		t.Fatalf("healthy: %d %s", a.code, a.raw)
	}
	fail.Store(true)
	a := p.do(t, "POST", "/v1/records", "", marshal(t, randomEntries(rng, 5)))
	if a.code != 503 || a.body["recorded"] != float64(0) || a.body["rule"] != "local-tier" ||
		!strings.Contains(a.raw, "none are recorded") || !strings.Contains(a.raw, "retry from entry 0") {
		t.Fatalf("a failed write: %d %s; want 503, recorded 0, retry from entry 0", a.code, a.raw)
	}
	if got := m.Stats().Records; got != 4 {
		t.Fatalf("the Mirror counts %d records; want the 4 written, not the 5 whose write failed", got)
	}
	var got dto.Metric
	if err := srv.counters.records.WithLabelValues(routeRecords).Write(&got); err != nil || got.GetCounter().GetValue() != 4 {
		t.Fatalf("the API counts %v records (%v); want 4", got.GetCounter().GetValue(), err)
	}
}
