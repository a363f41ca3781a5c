package benthos_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/internal/testseed"
)

// counters is a Benthos metrics exporter keeping each counter's total by
// its sink label.
type counters struct {
	mu sync.Mutex
	by map[string]map[string]int64 // name -> sink -> total
}

type counterFunc func(int64)

func (f counterFunc) Incr(n int64) { f(n) }

type nopTimer struct{}

func (nopTimer) Timing(int64) {}

type nopGauge struct{}

func (nopGauge) Set(int64) {}

func (c *counters) NewCounterCtor(name string, keys ...string) service.MetricsExporterCounterCtor {
	at := slices.Index(keys, "sink")
	return func(values ...string) service.MetricsExporterCounter {
		sink := ""
		if at >= 0 {
			sink = values[at]
		}
		return counterFunc(func(n int64) {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.by[name] == nil {
				c.by[name] = map[string]int64{}
			}
			c.by[name][sink] += n
		})
	}
}

func (c *counters) NewTimerCtor(string, ...string) service.MetricsExporterTimerCtor {
	return func(...string) service.MetricsExporterTimer { return nopTimer{} }
}

func (c *counters) NewGaugeCtor(string, ...string) service.MetricsExporterGaugeCtor {
	return func(...string) service.MetricsExporterGauge { return nopGauge{} }
}

func (c *counters) Close(context.Context) error { return nil }

func (c *counters) get(name, sink string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.by[name][sink]
}

// TestMetricsCountBySink: through Benthos' own metrics, each sink's
// recorded batches, failed writes and unrecorded batches are what the
// sinks did.
func TestMetricsCountBySink(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 8))
	const n = 80
	rejected := chosen(rng, n, 0.2)
	var list []string
	for _, id := range list2(rejected) {
		list = append(list, fmt.Sprint(id))
	}
	raw, lake, search := newSinkServer(t, nil), newSinkServer(t, nil), newSinkServer(t, nil)
	state := t.TempDir()
	lakeChild := obj{"switch": obj{"retry_until_success": false, "cases": []obj{
		{"check": "[" + strings.Join(list, ",") + "].contains(this.id)", "output": obj{"reject": "lake refused it"}},
		{"output": httpOutput(lake)},
	}}}
	searchOut := covmirrorOutput("search", false, state, httpOutput(search))
	searchOut["covmirror"].(obj)["batch_id"] = `${! if this.id < 10 { "none" } else { this.id.string() } }`
	c := &counters{by: map[string]map[string]int64{}}
	e := env(t)
	if err := e.RegisterMetricsExporter("counters", service.NewConfigSpec(), func(*service.ParsedConfig, *service.Logger) (service.MetricsExporter, error) {
		return c, nil
	}); err != nil {
		t.Fatal(err)
	}
	b := e.NewStreamBuilder()
	if err := b.SetYAML(stream(t, generate(n, 8), fanOut(
		covmirrorOutput("raw", true, state, httpOutput(raw)),
		covmirrorOutput("lake", false, state, lakeChild), searchOut))); err != nil {
		t.Fatal(err)
	}
	if err := b.SetMetricsYAML("counters: {}"); err != nil {
		t.Fatal(err)
	}
	b.SetLogger(slog.New(slog.DiscardHandler))
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name, sink string
		want       int
	}{
		{"covmirror_recorded_batches", "raw", n},
		{"covmirror_recorded_batches", "lake", n - len(rejected)},
		{"covmirror_write_failures", "lake", len(rejected)},
		{"covmirror_write_failures", "raw", 0},
		{"covmirror_recorded_batches", "search", n - 10},
		{"covmirror_unrecorded_batches", "search", 10},
	} {
		if got := c.get(w.name, w.sink); got != int64(w.want) {
			t.Errorf("%s{sink=%q} = %d, want %d", w.name, w.sink, got, w.want)
		}
	}
}
