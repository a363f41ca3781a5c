package client

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/mirror"
	"github.com/covmirror/covmirror/sidecar"
)

var ctx = context.Background()

const testToken = "client-test-token-0123456789"

var testSources = []coverage.Source{
	{Name: "files", Regime: coverage.Stored},
	{Name: "orders-kafka", Regime: coverage.BrokerManaged},
}

// testPod is a real pod behind a real sidecar.Server: a Pebble local tier,
// an embedded coverage table and positions table, a Mirror over them. The
// server serves on loopback TCP with testToken and on a Unix socket.
type testPod struct {
	local  *local.Store
	srv    *sidecar.Server
	addr   string // host:port, served with the token
	socket string
}

// startPod starts a pod. wrap, when set, stands between the TCP listener
// and the server's handler (fault injection): TCP is then served by an
// http.Server of the test's, and the socket is not served.
func startPod(t testing.TB, wrap func(http.Handler) http.Handler, tweak func(*sidecar.Options)) *testPod {
	t.Helper()
	table := tabletest.EmbeddedTable(t)
	pos, err := iceberg.OpenPositions(ctx, table.Catalog(), iceberg.Options{}, "", "pod-a", testSources...)
	if err != nil {
		t.Fatal(err)
	}
	l, err := local.Open(local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	opts := sidecar.Options{Local: l, Durable: table, Positions: pos, Sources: testSources, Token: testToken}
	if tweak != nil {
		tweak(&opts)
	}
	// The Mirror checkpoints into the tier the server reads, as a pod's
	// does: a wrapper a tweak put there included.
	m, err := mirror.New(mirror.Options{Local: l, Durable: opts.Durable, Writer: "pod-a", Interval: time.Hour, Positions: pos})
	if err != nil {
		t.Fatal(err)
	}
	opts.Mirror = m
	srv, err := sidecar.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	p := &testPod{local: l, srv: srv}
	ln, err := sidecar.ListenTCP("127.0.0.1:0", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	var wg sync.WaitGroup
	var hs *http.Server
	if wrap != nil {
		hs = &http.Server{Handler: wrap(srv.Handler()), ReadHeaderTimeout: 10 * time.Second}
		wg.Go(func() { _ = hs.Serve(ln) })
	} else {
		// A short directory: a socket's path is limited to about 100 bytes.
		dir, err := os.MkdirTemp("", "cmc")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(dir) })
		p.socket = filepath.Join(dir, "api.sock")
		uln, err := sidecar.ListenUnix(p.socket)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = srv.Serve(ln) })
		wg.Go(func() { _ = srv.Serve(uln) })
	}
	t.Cleanup(func() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		if hs != nil {
			_ = hs.Close()
		}
		wg.Wait()
		_ = m.Close()
	})
	return p
}

// transports are the two ways to reach a pod's API.
var transports = []string{"tcp", "socket"}

// client is a Client of p over transport, with short retry waits.
func (p *testPod) client(t testing.TB, transport string, tweak func(*Options)) *Client {
	t.Helper()
	opts := Options{Address: p.addr, Token: testToken}
	if transport == "socket" {
		opts = Options{Socket: p.socket}
	}
	if tweak != nil {
		tweak(&opts)
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	c.minWait, c.maxWait = time.Millisecond, 20*time.Millisecond
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// state is every destination's coverage in the pod's local tier.
func (p *testPod) state(t testing.TB) map[coverage.Destination][]coverage.Range {
	t.Helper()
	dests, err := p.local.Destinations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[coverage.Destination][]coverage.Range{}
	for _, d := range dests {
		set, err := p.local.Covered(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		if set.Len() > 0 {
			out[d] = set.Ranges()
		}
	}
	return out
}

// refModel is the reference: the union of the entries recorded, in memory.
type refModel struct{ m *coverage.InMemory }

func newModel() *refModel { return &refModel{m: coverage.NewInMemory()} }

func (r *refModel) add(t testing.TB, entries []coverage.Entry) {
	t.Helper()
	for _, e := range entries {
		if err := r.m.Record(ctx, e.Destination, e.Range); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *refModel) state() map[coverage.Destination][]coverage.Range {
	out := map[coverage.Destination][]coverage.Range{}
	dests, _ := r.m.Destinations(ctx)
	for _, d := range dests {
		set, _ := r.m.Covered(ctx, d)
		if set.Len() > 0 {
			out[d] = set.Ranges()
		}
	}
	return out
}

func sameState(t testing.TB, what string, got, want map[coverage.Destination][]coverage.Range) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d destinations, the model %d: %v vs %v", what, len(got), len(want), got, want)
	}
	for d, w := range want {
		if !slices.Equal(got[d], w) {
			t.Fatalf("%s: %s: %v, the model %v", what, d, got[d], w)
		}
	}
}

func setsState(sets map[coverage.Destination]*coverage.RangeSet) map[coverage.Destination][]coverage.Range {
	out := map[coverage.Destination][]coverage.Range{}
	for d, s := range sets {
		out[d] = s.Ranges()
	}
	return out
}

// logBuffer is a Logger's output, safe for concurrent use.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// resetConn ends the request's connection with a TCP reset, without an
// answer.
func resetConn(t testing.TB, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

func entry(sink, topic string, partition int32, start, end uint64) coverage.Entry {
	return coverage.Entry{Destination: coverage.Destination{Sink: sink, Topic: topic, Partition: partition}, Range: coverage.Range{Start: start, End: end}}
}
