package benthos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/recovery"
	"github.com/covmirror/covmirror/tier"
)

// TestCoverageIsWhatEachSinkAcked: raw and two sinks, each an http_client
// against a server that refuses chosen messages (raw only on a first
// attempt, lake always, search at random on each attempt). Committed
// coverage is exactly what each server answered 200, raw holds every
// message (a refusal was delivered again), and lake's refusals are its
// gaps.
func TestCoverageIsWhatEachSinkAcked(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	const n = 150
	rawRefused, lakeDown := chosen(rng, n, 0.15), chosen(rng, n, 0.2)
	srng := rand.New(rand.NewPCG(seed, 2)) // called under the server's lock
	raw := newSinkServer(t, func(id uint64, attempt int) bool { return attempt == 1 && rawRefused[id] })
	lake := newSinkServer(t, func(id uint64, _ int) bool { return lakeDown[id] })
	search := newSinkServer(t, func(uint64, int) bool { return srng.Float64() < 0.1 })
	state := t.TempDir()
	run(t, stream(t, generate(n, 1), fanOut(
		covmirrorOutput("raw", true, state, httpOutput(raw)),
		covmirrorOutput("lake", false, state, httpOutput(lake)),
		covmirrorOutput("search", false, state, httpOutput(search)))))

	got := committed(t, state)
	if !slices.Equal(raw.ids(), upTo(n)) || !slices.Equal(got["raw"], upTo(n)) {
		t.Fatalf("raw holds %s and has coverage %s, want every message 0..%d", short(raw.ids()), short(got["raw"]), n-1)
	}
	for id := range rawRefused {
		if raw.attempt(id) < 2 {
			t.Errorf("raw refused message %d once, and it was not delivered again (%d attempts)", id, raw.attempt(id))
		}
	}
	for _, s := range []struct {
		name string
		srv  *sinkServer
	}{{"lake", lake}, {"search", search}} {
		if !slices.Equal(got[s.name], s.srv.ids()) {
			t.Errorf("%s: committed coverage %s, but the sink acknowledged %s", s.name, short(got[s.name]), short(s.srv.ids()))
		}
	}
	var wantLake []uint64
	for id := range uint64(n) {
		if !lakeDown[id] {
			wantLake = append(wantLake, id)
		}
	}
	if !slices.Equal(lake.ids(), wantLake) {
		t.Fatalf("lake holds %s, want all but the refused", short(lake.ids()))
	}
	// lake's refusals were acknowledged, and are its gaps.
	tr, closer, err := tier.Open(context.Background(), tier.Settings{State: state, Writer: "test"}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	gaps, err := recovery.CommittedGaps(context.Background(), tr, recovery.GapsFilter{Sink: "lake"})
	if err != nil {
		t.Fatal(err)
	}
	var inGaps []uint64
	for _, g := range gaps {
		for id := g.Start; id < g.End; id++ {
			inGaps = append(inGaps, id)
		}
	}
	var down []uint64
	for id := range uint64(n) {
		if lakeDown[id] {
			down = append(down, id)
		}
	}
	if !slices.Equal(inGaps, down) {
		t.Fatalf("lake's gaps %s, want its refused messages %s", short(inGaps), short(down))
	}
}

// TestRawFailureNacksTheInput: with the raw output alone (no broker to
// retry it), a refused write fails the message back to the input, which
// delivers it again until raw holds it.
func TestRawFailureNacksTheInput(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 3))
	const n = 60
	refused := chosen(rng, n, 0.3)
	raw := newSinkServer(t, func(id uint64, attempt int) bool { return attempt <= 2 && refused[id] })
	state := t.TempDir()
	run(t, stream(t, generate(n, 1), covmirrorOutput("raw", true, state, httpOutput(raw))))
	if got := committed(t, state)["raw"]; !slices.Equal(raw.ids(), upTo(n)) || !slices.Equal(got, upTo(n)) {
		t.Fatalf("raw holds %s with coverage %s, want every message", short(raw.ids()), short(got))
	}
	for id := range refused {
		if raw.attempt(id) != 3 {
			t.Errorf("message %d: %d attempts, want 3 (refused twice, then delivered again)", id, raw.attempt(id))
		}
	}
}

// TestBatchErrorRecordsOnlyAcked: batches of 10. lake's child is a switch
// that rejects chosen messages (a batch error naming them): everything
// else of the batch is recorded. search's http_client sends a batch
// message by message and fails the whole batch at its first refusal (a
// plain error): nothing of such a batch is recorded, though the sink holds
// its first messages (a lag).
func TestBatchErrorRecordsOnlyAcked(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 4))
	const n, size = 200, 10
	rejected, refused := chosen(rng, n, 0.1), chosen(rng, n, 0.05)
	raw, lake := newSinkServer(t, nil), newSinkServer(t, nil)
	search := newSinkServer(t, func(id uint64, _ int) bool { return refused[id] })
	var list []string
	for _, id := range list2(rejected) {
		list = append(list, fmt.Sprint(id))
	}
	lakeChild := obj{"switch": obj{"retry_until_success": false, "cases": []obj{
		{"check": "[" + strings.Join(list, ",") + "].contains(this.id)", "output": obj{"reject": "lake refused it"}},
		{"output": httpOutput(lake)},
	}}}
	state := t.TempDir()
	run(t, stream(t, generate(n, size), fanOut(
		covmirrorOutput("raw", true, state, httpOutput(raw)),
		covmirrorOutput("lake", false, state, lakeChild),
		covmirrorOutput("search", false, state, httpOutput(search)))))

	got := committed(t, state)
	var wantLake, wantSearch []uint64
	for id := range uint64(n) {
		if !rejected[id] {
			wantLake = append(wantLake, id)
		}
		whole := true
		for b := id / size * size; b < id/size*size+size; b++ {
			whole = whole && !refused[b]
		}
		if whole {
			wantSearch = append(wantSearch, id)
		}
	}
	if !slices.Equal(got["raw"], upTo(n)) {
		t.Errorf("raw: coverage %s, want every message", short(got["raw"]))
	}
	if !slices.Equal(got["lake"], wantLake) || !slices.Equal(lake.ids(), wantLake) {
		t.Errorf("lake: coverage %s and held %s, want all but the rejected %s", short(got["lake"]), short(lake.ids()), short(list2(rejected)))
	}
	if !slices.Equal(got["search"], wantSearch) || !subset(got["search"], search.ids()) {
		t.Errorf("search: coverage %s, want the batches without a refusal %s (held: %s)", short(got["search"]), short(wantSearch), short(search.ids()))
	}
}

func list2(m map[uint64]bool) []uint64 {
	var out []uint64
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// TestUnparsableIDsRecordNothing: a message whose batch id does not parse
// is never recorded. A sink writes it anyway; raw fails it unwritten, and
// a fallback output is how a stream moves such a message on.
func TestUnparsableIDsRecordNothing(t *testing.T) {
	const n = 30
	raw, lake := newSinkServer(t, nil), newSinkServer(t, nil)
	state := t.TempDir()
	bad := `${! if this.id % 7 == 3 { "no-number" } else { this.id.string() } }`
	rawOut, lakeOut := covmirrorOutput("raw", true, state, httpOutput(raw)), covmirrorOutput("lake", false, state, httpOutput(lake))
	rawOut["covmirror"].(obj)["batch_id"], lakeOut["covmirror"].(obj)["batch_id"] = bad, bad
	run(t, stream(t, generate(n, 5), fanOut(obj{"fallback": []obj{rawOut, {"drop": obj{}}}}, lakeOut)))
	var good []uint64
	for id := range uint64(n) {
		if id%7 != 3 {
			good = append(good, id)
		}
	}
	got := committed(t, state)
	if !slices.Equal(got["raw"], good) || !slices.Equal(raw.ids(), good) {
		t.Errorf("raw: coverage %s, held %s; want %s (the unparsable never written)", short(got["raw"]), short(raw.ids()), short(good))
	}
	if !slices.Equal(got["lake"], good) || !slices.Equal(lake.ids(), upTo(n)) {
		t.Errorf("lake: coverage %s, held %s; want coverage %s and every message held", short(got["lake"]), short(lake.ids()), short(good))
	}
}

// TestConfigErrors: a missing field, the sidecar without its client, and
// a setting out of range are clear errors when the stream is built.
func TestConfigErrors(t *testing.T) {
	state := t.TempDir()
	for _, c := range []struct {
		name string
		edit func(c, pod obj)
		want string
	}{
		{"no batch_id", func(c, _ obj) { delete(c, "batch_id") }, "batch_id"},
		{"no output", func(c, _ obj) { delete(c, "output") }, "output"},
		{"sidecar scheme", func(c, _ obj) { c["sidecar"] = obj{"address": "ftp://127.0.0.1:9464"} }, "sidecar"},
		{"sidecar path", func(c, _ obj) { c["sidecar"] = obj{"address": "127.0.0.1:9464/records"} }, "sidecar"},
		{"socket and address", func(c, _ obj) { c["sidecar"] = obj{"address": "127.0.0.1:9464", "socket": "/tmp/x"} }, "not both"},
		{"token alone", func(c, _ obj) { c["sidecar"] = obj{"token": "x"} }, "sidecar.token"},
		{"bad interval", func(_, p obj) { p["interval"] = "-1s" }, "interval"},
		{"bad durable", func(_, p obj) { p["durable"] = "sqlite" }, "sqlite"},
		{"empty state", func(_, p obj) { p["state"] = "" }, "pod.state"},
		{"status code", func(c, _ obj) { c["permanent"] = obj{"status_codes": []int{400, 4000}} }, "permanent.status_codes[1]"},
		{"pattern", func(c, _ obj) { c["permanent"] = obj{"errors": []string{"ok", "(unclosed"}} }, "permanent.errors[1]"},
		{"empty pattern", func(c, _ obj) { c["permanent"] = obj{"errors": []string{" "}} }, "permanent.errors[0] is empty"},
		{"attempts", func(c, _ obj) { c["permanent"] = obj{"attempts": -1} }, "permanent.attempts"},
		{"raw refused", func(c, _ obj) { c["sink"], c["reference"], c["permanent"] = "raw", true, obj{"attempts": 3} }, "permanent with reference: true"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := covmirrorOutput("lake", false, state, obj{"drop": obj{}})
			c.edit(out["covmirror"].(obj), out["covmirror"].(obj)["pod"].(obj))
			err := runErr(t, stream(t, generate(1, 1), out))
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error naming %q", err, c.want)
			}
		})
	}
}

// TestStalledSinkDoesNotHoldTheStream: a sink that never answers is cut
// short by the output's timeout: its writes are gaps, acknowledged, and
// the stream finishes with raw whole.
func TestStalledSinkDoesNotHoldTheStream(t *testing.T) {
	release := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(stalled.Close)
	t.Cleanup(func() { close(release) }) // before Close, which waits for the handlers
	const n = 20
	raw := newSinkServer(t, nil)
	state := t.TempDir()
	lake := covmirrorOutput("lake", false, state, obj{"http_client": obj{"url": stalled.URL, "verb": "POST", "retries": 0, "timeout": "1h"}})
	lake["covmirror"].(obj)["timeout"] = "100ms"
	run(t, stream(t, generate(n, 5), fanOut(covmirrorOutput("raw", true, state, httpOutput(raw)), lake)))
	got := committed(t, state)
	if !slices.Equal(got["raw"], upTo(n)) || len(got["lake"]) != 0 {
		t.Fatalf("raw's coverage %s, the stalled lake's %s: want raw whole and lake none", short(got["raw"]), short(got["lake"]))
	}
}
