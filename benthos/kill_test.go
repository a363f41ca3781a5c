package benthos_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/childproc"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/pod"
	"github.com/covmirror/covmirror/tier"
)

func TestMain(m *testing.M) {
	childproc.Main(m, map[string]func() error{"stream": childStream})
}

// childStream runs an endless stream into the sink servers the parent
// named, checkpointing often, until it is killed.
func childStream() error {
	state, raw, lake := os.Getenv("KILL_STATE"), os.Getenv("KILL_RAW"), os.Getenv("KILL_LAKE")
	if state == "" || raw == "" || lake == "" {
		return errors.New("KILL_STATE, KILL_RAW and KILL_LAKE name the state and the sinks")
	}
	child := func(url string) obj {
		return obj{"http_client": obj{"url": url + "/write", "verb": "POST", "retries": 0, "max_in_flight": 4}}
	}
	out := func(sink string, ref bool, url string) obj {
		o := covmirrorOutput(sink, ref, state, child(url))
		o["covmirror"].(obj)["pod"].(obj)["interval"] = "50ms"
		return o
	}
	in := obj{"generate": obj{"count": 0, "interval": "", "batch_size": 10, "mapping": `root = {"id": counter() - 1}`}}
	y, err := streamYAML(in, fanOut(out("raw", true, raw), out("lake", false, lake)))
	if err != nil {
		return err
	}
	e, err := newEnv()
	if err != nil {
		return err
	}
	b := e.NewStreamBuilder()
	if err := b.SetYAML(y); err != nil {
		return err
	}
	s, err := b.Build()
	if err != nil {
		return err
	}
	return s.Run(context.Background())
}

// TestKilledMidBatchOnlyLags: a stream in a child process, SIGKILLed at a
// random moment (mid-batch: the sinks answer slowly) and started again,
// leaves committed coverage that never claims a batch its sink does not
// hold; the next pod on the state checkpoints what the dead one recorded
// and had not.
func TestKilledMidBatchOnlyLags(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 6))
	lakeRng := rand.New(rand.NewPCG(seed, 7))
	raw := newSlowSinkServer(t, nil, time.Millisecond)
	lake := newSlowSinkServer(t, func(uint64, int) bool { return lakeRng.Float64() < 0.05 }, 2*time.Millisecond)
	state := t.TempDir()
	kills := 4
	if testing.Short() {
		kills = 2
	}
	for i := range kills {
		before := raw.writes()
		c := childproc.Start(t, "stream", "KILL_STATE="+state, "KILL_RAW="+raw.URL, "KILL_LAKE="+lake.URL)
		// Killed once it is writing (its start is slow under the race
		// detector), at a random moment after.
		for deadline := time.Now().Add(2 * time.Minute); raw.writes() < before+20; time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				c.KillAfter(t, 0, "a stream that wrote nothing")
				t.Fatalf("stream %d wrote nothing to raw in 2 minutes", i)
			}
		}
		c.KillAfter(t, time.Duration(rng.IntN(600))*time.Millisecond, fmt.Sprintf("stream %d", i))
		check(t, state, raw, lake, fmt.Sprintf("after kill %d", i))
	}
	// The next pod on the state checkpoints what the dead ones recorded.
	p, err := pod.Start(context.Background(), pod.Options{Tier: tier.Settings{State: state, Writer: "test"}, Addr: "127.0.0.1:0", Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Shutdown(); err != nil {
		t.Fatal(err)
	}
	got := check(t, state, raw, lake, "after the final checkpoint")
	if len(got["raw"]) == 0 || len(got["lake"]) == 0 {
		t.Fatalf("nothing was committed (raw %d, lake %d batches): the test tests nothing", len(got["raw"]), len(got["lake"]))
	}
	t.Logf("raw holds %d batches, %d committed; lake %d, %d committed", len(raw.ids()), len(got["raw"]), len(lake.ids()), len(got["lake"]))
}

// check fails t if committed coverage claims a batch a sink lacks.
func check(t *testing.T, state string, raw, lake *sinkServer, when string) map[string][]uint64 {
	t.Helper()
	got := committed(t, state)
	for sink, srv := range map[string]*sinkServer{"raw": raw, "lake": lake} {
		if !subset(got[sink], srv.ids()) {
			t.Fatalf("%s: %s's committed coverage %s leads what it holds %s", when, sink, short(got[sink]), short(srv.ids()))
		}
	}
	return got
}
