package benthos_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/recovery"
	"github.com/covmirror/covmirror/tier"
)

// replayStream is a replay stream: the plan's tasks from the pod's state,
// one message per batch read back from raw's server (a batch raw lacks is
// dropped), written through a covmirror output to the task's sink.
func replayStream(t *testing.T, state string, raw *sinkServer, n int, sinks map[string]*sinkServer, edits ...func(plan, out obj)) string {
	return replayInto(t, obj{"pod": obj{"state": state, "interval": "1h"}}, raw, n, sinks, edits...)
}

// replayInto is replayStream with the plan read from, and the coverage
// recorded into, dest: {"pod": ...} or {"sidecar": ...}; each of edits
// changes the covmirror_plan input's and the covmirror output's fields.
func replayInto(t *testing.T, dest obj, raw *sinkServer, n int, sinks map[string]*sinkServer, edits ...func(plan, out obj)) string {
	var cases []obj
	for name, srv := range sinks {
		cases = append(cases, obj{"check": `meta("sink") == "` + name + `"`, "output": httpOutput(srv)})
	}
	cases = append(cases, obj{"output": obj{"reject": `no such sink: ${! meta("sink") }`}})
	out := covmirrorOutput(`${! meta("sink") }`, false, "", obj{"switch": obj{"retry_until_success": false, "cases": cases}})
	plan := obj{"max_batches": 7, "extents": []obj{{"topic": "orders", "partition": 0, "end": n}}}
	delete(out["covmirror"].(obj), "pod")
	for k, v := range dest {
		out["covmirror"].(obj)[k], plan[k] = v, v
	}
	for _, edit := range edits {
		edit(plan, out["covmirror"].(obj))
	}
	in := obj{"covmirror_plan": plan}
	y := stream(t, in, out)
	return y + `pipeline:
  processors:
    - mapping: 'root = range(metadata("start").number(), metadata("end").number())'
    - unarchive:
        format: json_array
    - http:
        url: '` + raw.URL + `/batch/${! this }'
        verb: GET
        retries: 0
    - switch:
        - check: errored() && metadata("http_status_code") == 404
          processors:
            - mapping: 'root = deleted()'
`
}

// plan is the committed plan on state.
func plan(t *testing.T, state string, n uint64) []recovery.Gap {
	t.Helper()
	tr, closer, err := tier.Open(context.Background(), tier.Settings{State: state, Writer: "test"}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	gaps, err := recovery.CommittedGaps(context.Background(), tr, recovery.GapsFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return gaps
}

// TestReplayClosesGaps: the pipeline leaves gaps in two sinks (one sink
// down at random, one sink refusing all of a stretch); the replay stream,
// planned by covmirror_plan over the source's extent, reads raw back and
// closes them, and a second replay finds nothing to do. Coverage stays
// exactly what each sink holds.
func TestReplayClosesGaps(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 5))
	const n = 120
	lakeDown := chosen(rng, n, 0.25)
	stretch := uint64(rng.IntN(n - 20))
	var healthy atomic.Bool // the sinks come back up for the replay
	raw := newSinkServer(t, nil)
	lake := newSinkServer(t, func(id uint64, _ int) bool { return !healthy.Load() && lakeDown[id] })
	search := newSinkServer(t, func(id uint64, _ int) bool { return !healthy.Load() && id >= stretch && id < stretch+20 })
	state := t.TempDir()
	run(t, stream(t, generate(n, 4), fanOut(
		covmirrorOutput("raw", true, state, httpOutput(raw)),
		covmirrorOutput("lake", false, state, httpOutput(lake)),
		covmirrorOutput("search", false, state, httpOutput(search)))))
	if len(plan(t, state, n)) == 0 {
		t.Fatal("the pipeline left no gaps to replay")
	}
	healthy.Store(true)
	sinks := map[string]*sinkServer{"lake": lake, "search": search}
	run(t, replayStream(t, state, raw, n, sinks))
	if left := plan(t, state, n); len(left) > 0 {
		t.Fatalf("after the replay the plan still holds %v", left)
	}
	got := committed(t, state)
	for name, srv := range sinks {
		if !slices.Equal(srv.ids(), upTo(n)) || !slices.Equal(got[name], upTo(n)) {
			t.Errorf("%s: holds %s with coverage %s, want every batch", name, short(srv.ids()), short(got[name]))
		}
	}
	before := lake.attempt(0) + search.attempt(0)
	run(t, replayStream(t, state, raw, n, sinks)) // nothing to do: writes nothing
	if after := lake.attempt(0) + search.attempt(0); after != before {
		t.Errorf("a replay of an empty plan wrote again")
	}
}

// TestOnePodPerProcess: while a stream's pod runs, a covmirror output
// with other pod settings is refused, naming the setting (never its
// value), and the first stream is unharmed.
func TestOnePodPerProcess(t *testing.T) {
	raw := newSinkServer(t, nil)
	stateA, stateB := t.TempDir(), t.TempDir()
	endless := obj{"generate": obj{"count": 0, "interval": "5ms", "mapping": `root = {"id": counter() - 1}`}}
	a := build(t, stream(t, endless, covmirrorOutput("raw", true, stateA, httpOutput(raw))))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	for len(raw.ids()) < 3 { // the pod is up once raw acknowledged something
		select {
		case err := <-done:
			t.Fatalf("the first stream ended: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	err := runErr(t, stream(t, generate(1, 1), covmirrorOutput("raw", true, stateB, obj{"drop": obj{}})))
	if err == nil || !strings.Contains(err.Error(), "pod.state") || strings.Contains(err.Error(), stateB) {
		t.Errorf("a second pod's settings: got %v, want an error naming pod.state without its value", err)
	}
	if err := a.StopWithin(time.Minute); err != nil { // closes the outputs: the pod's final checkpoint
		t.Fatalf("stopping the first stream: %v", err)
	}
	cancel()
	<-done
	if got := committed(t, stateA)["raw"]; len(got) == 0 || !subset(got, raw.ids()) {
		t.Fatalf("the first stream's coverage %s, held %s", short(got), short(raw.ids()))
	}
}

// TestReplayVerifiesRawsHoles: raw holds batches its coverage lacks (their
// records lost), a hole the plan reports as verify-reference; the replay
// reads raw back and records for raw exactly what it holds, and a batch
// raw does not hold stays a hole, with no state recorded about it.
func TestReplayVerifiesRawsHoles(t *testing.T) {
	const n, lost = 60, 10
	raw, lake := newSinkServer(t, nil), newSinkServer(t, nil)
	state := t.TempDir()
	// The last batches reach raw without their coverage.
	rawOut := obj{"switch": obj{"cases": []obj{
		{"check": "this.id < " + strconv.Itoa(n-lost), "output": covmirrorOutput("raw", true, state, httpOutput(raw))},
		{"output": httpOutput(raw)},
	}}}
	run(t, stream(t, generate(n, 1), fanOut(rawOut, covmirrorOutput("lake", false, state, httpOutput(lake)))))
	raw.mu.Lock()
	delete(raw.held, n-1) // and raw lost the very last one
	raw.mu.Unlock()
	want := []recovery.Gap{{Sink: "raw", Topic: "orders", Partition: 0, Start: n - lost, End: n, Kind: recovery.KindVerifyReference}}
	if got := plan(t, state, n); !slices.Equal(got, want) {
		t.Fatalf("the plan %v, want %v", got, want)
	}
	run(t, replayStream(t, state, raw, n, map[string]*sinkServer{"raw": raw, "lake": lake}))
	want[0].Start = n - 1
	if got := plan(t, state, n); !slices.Equal(got, want) {
		t.Fatalf("after the replay the plan is %v, want only the batch raw lacks, %v", got, want)
	}
	if got := committed(t, state)["raw"]; !slices.Equal(got, upTo(n-1)) {
		t.Fatalf("raw's coverage %s, want 0..%d (what raw holds)", short(got), n-2)
	}
	// The batch raw lacks is a hole for a person to look into, no sink's
	// loss: the verification records no state about it.
	if got := statesOn(t, state); len(got) > 0 {
		t.Fatalf("the verification of raw's hole recorded the states %+v, want none", got)
	}
}
