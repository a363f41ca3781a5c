package covmap

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/sidecar"
)

// Names a trim, a URL's parser or an HTML attribute could change: leading
// and trailing spaces, '&', '#', '%', '+', quotes, non-ASCII.
const (
	oddSink  = ` lake & #1 "q" 'x' 100% +ü `
	oddTopic = ` orders #2 & 50% é `
	longSink = "warehouse-orders-replica-eu-west-1-primary-with-a-long-name"
)

// viewFixture is a committed table with oddSink, "lake" (oddSink
// trimmed) and longSink on oddTopic and "orders", the map mounted on the
// sidecar as serve mounts it, so that /v1/plan sits beside /v1/map.
type viewFixture struct {
	srv   *httptest.Server
	table Source
	// gaps are each sink's gaps on oddTopic/0, as "start-end".
	gaps map[string]string
}

// newViewFixture builds the fixture; wrap, when not nil, wraps the table's
// source; a token, when given, is the sidecar's (the page is public, its
// data is not).
func newViewFixture(t *testing.T, wrap func(Source) Source, token ...string) *viewFixture {
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
	const big = 4_000_000_000 // wide numbers in the tables
	for _, r := range []struct {
		sink, topic string
		part        int32
		start, end  uint64
	}{
		{"raw", oddTopic, 0, 0, 100}, {"raw", oddTopic, 1, 0, 100}, {"raw", "orders", 0, 0, big},
		{oddSink, oddTopic, 0, 0, 40}, {oddSink, oddTopic, 1, 0, 100}, {oddSink, "orders", 0, 0, big},
		{"lake", oddTopic, 0, 0, 70}, {"lake", oddTopic, 1, 0, 100}, {"lake", "orders", 0, 0, big},
		{longSink, oddTopic, 0, 0, 100}, {longSink, oddTopic, 1, 0, 100}, {longSink, "orders", 0, 0, 1},
	} {
		d := coverage.Destination{Sink: r.sink, Topic: r.topic, Partition: r.part}
		if err := m.Record(ctx, d, coverage.Range{Start: r.start, End: r.end}); err != nil {
			t.Fatalf("record %s: %v", d, err)
		}
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	var src Source = TableSource{Table: table}
	if wrap != nil {
		src = wrap(src)
	}
	h, err := Handler(Options{Source: src, CacheFor: -1})
	if err != nil {
		t.Fatal(err)
	}
	opts := sidecar.Options{Mirror: m, Local: store, Durable: table,
		Extra: map[string]http.Handler{"GET /{$}": h, "GET /v1/map": h}}
	if len(token) > 0 {
		opts.Token, opts.PublicPaths = token[0], []string{"/"}
	}
	sc, err := sidecar.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sc.Handler())
	t.Cleanup(srv.Close)
	return &viewFixture{srv: srv, table: TableSource{Table: table}, gaps: map[string]string{oddSink: "40-100", "lake": "70-100", longSink: ""}}
}

// noCommitTime is a source without commit times, as a tier other than an
// Iceberg table would be.
type noCommitTime struct{ Source }

func (n noCommitTime) Committed(ctx context.Context) (Committed, error) {
	c, err := n.Source.Committed(ctx)
	c.CommittedAt = time.Time{}
	return c, err
}
