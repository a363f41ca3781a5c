package sidecar

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

const benchBatch = 100

// benchBody is batch n of worker w: 100 adjacent ranges of one destination.
func benchBody(w, n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range benchBatch {
		if i > 0 {
			b.WriteByte(',')
		}
		start := uint64(n*benchBatch+i) * 2 // every other batch: ranges stay apart, one key each
		fmt.Fprintf(&b, `{"sink":"lake","topic":"orders","partition":%d,"start":%d,"end":%d}`, w, start, start+1)
	}
	b.WriteByte(']')
	return b.Bytes()
}

type benchResult struct {
	recordsPerSec float64
	p99           time.Duration
}

// runClients sends batches from clients goroutines, batches in all, and
// measures records per second and the 99th percentile request latency.
func runClients(b *testing.B, clients, batches int, send func(w, n int) error) benchResult {
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for w := range clients {
		wg.Go(func() {
			for {
				n := int(next.Add(1)) - 1
				if n >= batches {
					return
				}
				t0 := time.Now()
				if err := send(w, n); err != nil {
					failed.Store(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	return benchResult{recordsPerSec: float64(batches*benchBatch) / elapsed.Seconds(), p99: all[len(all)*99/100]}
}

// BenchmarkSidecarRecords: records in batches of 100 over loopback HTTP and
// over the Unix socket, beside the baseline from the same run: the
// library's in-process Mirror.Record of the same ranges. b.N is the number
// of batches per mode; 4 concurrent clients.
func BenchmarkSidecarRecords(b *testing.B) {
	const clients = 4
	batches := max(b.N, 200)
	results := map[string]benchResult{}

	base := newPod(b, nil)
	results["in-process Mirror.Record"] = runClients(b, clients, batches, func(w, n int) error {
		for i := range benchBatch {
			start := uint64(n*benchBatch+i) * 2
			if err := base.mirror.Record(context.Background(), coverage.Destination{Sink: "lake", Topic: "orders", Partition: int32(w)}, coverage.Range{Start: start, End: start + 1}); err != nil {
				return err
			}
		}
		return nil
	})

	for _, mode := range []string{"tcp", "unix"} {
		p := newPod(b, nil)
		var ln net.Listener
		var err error
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
		url := "http://covmirror/v1/records"
		if mode == "tcp" {
			ln, err = ListenTCP("127.0.0.1:0", false, nil)
			url = "http://" + ln.Addr().String() + "/v1/records"
		} else {
			path := filepath.Join(b.TempDir(), "api.sock")
			ln, err = ListenUnix(path)
			client.Transport = &http.Transport{MaxIdleConnsPerHost: clients, DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", path)
			}}
		}
		if err != nil {
			b.Fatal(err)
		}
		go func() { _ = p.srv.Serve(ln) }()
		bodies := make([][]byte, batches)
		for n := range bodies {
			bodies[n] = benchBody(n%clients, n) // prebuilt: measure the server, not the client's formatting
		}
		results[mode] = runClients(b, clients, batches, func(w, n int) error {
			resp, err := client.Post(url, "application/json", bytes.NewReader(bodies[n]))
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %s", resp.Status)
			}
			return nil
		})
		_ = p.srv.Shutdown(context.Background())
	}
	baseline := results["in-process Mirror.Record"]
	b.Logf("records in batches of %d, %d clients, %d batches per mode (target: >= 100000 records/s, p99 <= 5ms per request)", benchBatch, clients, batches)
	b.Logf("  %-26s %12.0f records/s  p99 %8s per batch", "in-process Mirror.Record", baseline.recordsPerSec, baseline.p99.Round(time.Microsecond))
	for _, mode := range []string{"tcp", "unix"} {
		r := results[mode]
		b.Logf("  %-26s %12.0f records/s  p99 %8s per request  ratio to baseline %.3f", "HTTP over "+mode, r.recordsPerSec, r.p99.Round(time.Microsecond), r.recordsPerSec/baseline.recordsPerSec)
	}
	b.ReportMetric(results["tcp"].recordsPerSec, "tcp-records/s")
	b.ReportMetric(results["unix"].recordsPerSec, "unix-records/s")
	b.ReportMetric(float64(results["tcp"].p99.Microseconds()), "tcp-p99-µs")
	b.ReportMetric(float64(results["unix"].p99.Microseconds()), "unix-p99-µs")
}
