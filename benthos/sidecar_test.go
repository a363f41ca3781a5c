package benthos_test

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/sidecar/client"
	"github.com/covmirror/covmirror/tier"
)

// TestRecordsIntoARunningPod: covmirror outputs record into a running pod
// (a real sidecar: pod.Start, as `covmirror serve` runs it) over TCP with
// its token and over its socket; committed coverage is exactly what each
// sink acknowledged, and a replay stream planned and recorded through the
// same pod closes the gaps.
func TestRecordsIntoARunningPod(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 10))
	const n, token = 100, "a-token-of-the-running-pod"
	lakeDown := chosen(rng, n, 0.25)
	var healthy atomic.Bool
	raw := newSinkServer(t, nil)
	lake := newSinkServer(t, func(id uint64, _ int) bool { return !healthy.Load() && lakeDown[id] })
	state := t.TempDir()
	sock := filepath.Join(t.TempDir(), "pod.sock")
	ctx := context.Background()
	p, err := pod.Start(ctx, pod.Options{Tier: tier.Settings{State: state, Writer: "test"}, Addr: "127.0.0.1:0", Socket: sock, Token: token,
		Interval: time.Hour, ReplicateEvery: pod.Never})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.Shutdown(); err != nil {
			t.Error(err)
		}
	}()
	tcp := obj{"address": "http://" + p.Addr().String() + "/v1/", "token": token}
	viaSidecar := func(sink string, ref bool, child, sidecar obj) obj {
		o := covmirrorOutput(sink, ref, "", child)
		delete(o["covmirror"].(obj), "pod")
		o["covmirror"].(obj)["sidecar"] = sidecar
		return o
	}
	run(t, stream(t, generate(n, 1), fanOut( // one message a batch: http_client fails a batch whole
		viaSidecar("raw", true, httpOutput(raw), tcp),
		viaSidecar("lake", false, httpOutput(lake), obj{"socket": sock}))))
	c, err := client.New(client.Options{Socket: sock})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	got := committed(t, state)
	if !slices.Equal(got["raw"], upTo(n)) || !slices.Equal(got["lake"], lake.ids()) || len(lake.ids()) == n {
		t.Fatalf("raw's coverage %s; lake's %s, holding %s", short(got["raw"]), short(got["lake"]), short(lake.ids()))
	}
	healthy.Store(true)
	run(t, replayInto(t, obj{"sidecar": tcp}, raw, n, map[string]*sinkServer{"lake": lake}))
	if _, err := c.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if got := committed(t, state); !slices.Equal(got["lake"], upTo(n)) || !slices.Equal(lake.ids(), upTo(n)) {
		t.Fatalf("after the replay lake's coverage %s, holding %s: want every batch", short(got["lake"]), short(lake.ids()))
	}
	if left := plan(t, state, n); len(left) > 0 {
		t.Fatalf("after the replay the plan holds %v", left)
	}
}
