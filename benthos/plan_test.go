package benthos_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redpanda-data/benthos/v4/public/service"
	"gopkg.in/yaml.v3"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/recovery"
	"github.com/covmirror/covmirror/tier"
)

// planMessages runs a stream of the covmirror_plan input and returns the
// tasks it emitted, read from each message's metadata, after checking
// that its body says the same.
func planMessages(t *testing.T, input obj) []recovery.Gap {
	t.Helper()
	b := env(t).NewStreamBuilder()
	y, err := yaml.Marshal(obj{"covmirror_plan": input})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.AddInputYAML(string(y)); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []recovery.Gap
	if err := b.AddConsumerFunc(func(_ context.Context, m *service.Message) error {
		meta := map[string]string{}
		for _, k := range []string{"sink", "topic", "partition", "start", "end", "kind"} {
			meta[k], _ = m.MetaGet(k)
		}
		p, _ := strconv.Atoi(meta["partition"])
		start, _ := strconv.ParseUint(meta["start"], 10, 64)
		end, _ := strconv.ParseUint(meta["end"], 10, 64)
		g := recovery.Gap{Sink: meta["sink"], Topic: meta["topic"], Partition: int32(p), Start: start, End: end, Kind: recovery.TaskKind(meta["kind"])}
		raw, err := m.AsBytes()
		if err != nil {
			return err
		}
		var body recovery.Gap
		if err := json.Unmarshal(raw, &body); err != nil || body != g {
			t.Errorf("a task's body %s is not its metadata %+v", raw, g)
		}
		mu.Lock()
		defer mu.Unlock()
		got = append(got, g)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b.SetLogger(slog.New(slog.DiscardHandler))
	s, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestPlanInputEmitsThePlan: covmirror_plan emits the plan's tasks, cut
// to max_batches, with raw's holes over the extent as verify-reference
// tasks: read from the durable tier, and from a running pod's record API
// over TCP with its token and over its socket, alike.
func TestPlanInputEmitsThePlan(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 9))
	const n = 90
	lakeDown := chosen(rng, n, 0.3)
	raw := newSinkServer(t, nil)
	lake := newSinkServer(t, func(id uint64, _ int) bool { return lakeDown[id] })
	state := t.TempDir()
	run(t, stream(t, generate(n, 5), fanOut(
		covmirrorOutput("raw", true, state, httpOutput(raw)),
		covmirrorOutput("lake", false, state, httpOutput(lake)))))
	extents := []coverage.Extent{{Topic: "orders", Partition: 0, End: n + 15}} // the source acked more than raw holds
	ctx := context.Background()
	ts := tier.Settings{State: state, Writer: "test"}
	tr, closer, err := tier.Open(ctx, ts, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	tasks, err := recovery.Plan(ctx, tr, recovery.PlanOptions{MaxBatches: 4, Extents: extents})
	if err != nil {
		t.Fatal(err)
	}
	want := recovery.GapsOf(tasks, recovery.GapsFilter{})
	if !slices.ContainsFunc(want, func(g recovery.Gap) bool { return g.Kind == recovery.KindVerifyReference }) || len(want) < 3 {
		t.Fatalf("the plan %v: want lake's gaps and raw's hole past its end", want)
	}
	ext := []obj{{"topic": "orders", "partition": 0, "end": n + 15}}
	if got := planMessages(t, obj{"pod": obj{"state": state}, "max_batches": 4, "extents": ext}); !slices.Equal(got, want) {
		t.Fatalf("from the durable tier: emitted %v, want %v", got, want)
	}
	sock := filepath.Join(t.TempDir(), "pod.sock")
	p, err := pod.Start(ctx, pod.Options{Tier: ts, Addr: "127.0.0.1:0", Socket: sock, Token: "s3cret-token-of-24-chars", Interval: time.Hour, ReplicateEvery: pod.Never})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	for name, sidecar := range map[string]obj{
		"tcp":    {"address": p.Addr().String(), "token": "s3cret-token-of-24-chars"},
		"url":    {"address": "http://" + p.Addr().String() + "/v1/", "token": "s3cret-token-of-24-chars"},
		"socket": {"socket": sock},
	} {
		if got := planMessages(t, obj{"sidecar": sidecar, "max_batches": 4, "extents": ext}); !slices.Equal(got, want) {
			t.Errorf("from the pod over %s: emitted %v, want %v", name, got, want)
		}
	}
}
