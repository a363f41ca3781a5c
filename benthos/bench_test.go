package benthos_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
)

// counter is a sink that acknowledges every batch and times the first and
// the last write, so that a run measures the stream's throughput without
// its start (the pod's) and its shutdown (the final checkpoint).
type counter struct {
	mu          sync.Mutex
	n           int
	first, last time.Time
}

func (c *counter) Connect(context.Context) error { return nil }
func (c *counter) Close(context.Context) error   { return nil }
func (c *counter) WriteBatch(_ context.Context, b service.MessageBatch) error {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		c.first = now
	}
	c.n += len(b)
	c.last = now
	return nil
}

// rate is messages per second between the first and the last write.
func (c *counter) rate() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return float64(c.n-1) / c.last.Sub(c.first).Seconds()
}

// BenchmarkOutputOverhead runs the same stream (200,000 messages in
// batches of 100) into a sink that acknowledges at once, directly and
// through a covmirror output into an in-process pod, and reports both
// rates and their ratio: the cost covmirror adds per message, with a sink
// that costs nothing (a real sink's write dwarfs it).
func BenchmarkOutputOverhead(b *testing.B) {
	const messages, batch = 200_000, 100
	var plain, covered float64
	for range b.N {
		for _, withCoverage := range []bool{false, true} {
			c := &counter{}
			e := env(b)
			if err := e.RegisterBatchOutput("counter", service.NewConfigSpec(), func(*service.ParsedConfig, *service.Resources) (service.BatchOutput, service.BatchPolicy, int, error) {
				return c, service.BatchPolicy{}, 1, nil
			}); err != nil {
				b.Fatal(err)
			}
			out := obj{"counter": obj{}}
			if withCoverage {
				out = covmirrorOutput("lake", false, b.TempDir(), out)
			}
			sb := e.NewStreamBuilder()
			sb.SetLogger(slog.New(slog.DiscardHandler))
			if err := sb.SetYAML(stream(b, generate(messages, batch), out)); err != nil {
				b.Fatal(err)
			}
			s, err := sb.Build()
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Run(context.Background()); err != nil {
				b.Fatal(err)
			}
			if c.n != messages {
				b.Fatalf("the sink got %d messages, want %d", c.n, messages)
			}
			if withCoverage {
				covered += c.rate() / float64(b.N)
			} else {
				plain += c.rate() / float64(b.N)
			}
		}
	}
	b.ReportMetric(plain, "msgs/s-plain")
	b.ReportMetric(covered, "msgs/s-covmirror")
	b.ReportMetric(covered/plain, "ratio")
	b.Logf("%d messages in batches of %d: %.0f msgs/s without covmirror, %.0f with (ratio %.2f)", messages, batch, plain, covered, covered/plain)
}
