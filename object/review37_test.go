package object

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/testseed"
)

// TestRetriedStateKeepsItsFirstTime: a pipeline's POST /v1/states of a
// refusal loses its answer; the client retries with the same ID (as the Go
// and Python clients do), and the sidecar stamps the retry with its own
// "now", so the retry is the same event ID with a later At. Meanwhile an
// operator reopened the range. The object tier keeps both copies (the key
// names the bytes) and States returns whichever key lists first, by
// digest: about half the time the retry's later copy, which then outranks
// the reopen and holds the range refused. PostgreSQL's tier keeps the
// first copy (ON CONFLICT DO NOTHING), so the same history resolves
// differently by tier, and a "harmless" retry undoes a reopen.
func TestRetriedStateKeepsItsFirstTime(t *testing.T) {
	seed := testseed.Seed(t)
	rng := rand.New(rand.NewPCG(seed, 37))
	lake := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 0}
	r := coverage.Range{Start: 0, End: 10}
	t1 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lost := 0
	const trials = 40
	for trial := range trials {
		s := openDirStore(t, t.TempDir())
		id := fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64())
		refusal := gapstate.Event{ID: id, Destination: lake, Range: r, State: gapstate.Refused, Reason: "400", By: "pod-a", At: t1}
		reopen := gapstate.Event{ID: "reopen" + id[:8], Destination: lake, Range: r, State: gapstate.Reopened, Reason: "fixed", By: "alice", At: t1.Add(2 * time.Second)}
		retry := refusal
		retry.At = t1.Add(3 * time.Second) // the sidecar's clock at the retry
		for _, batch := range [][]gapstate.Event{{refusal}, {reopen}, {retry}} {
			if err := s.AppendStates(ctx, batch); err != nil {
				t.Fatal(err)
			}
		}
		events, err := s.States(ctx, durable.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if spans := gapstate.Resolve(lake, "raw", events, nil); len(spans) > 0 {
			lost++
			t.Logf("trial %d (id %q): the reopen is undone by the retry: %+v", trial, id, spans[0].Event)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d trials: a retried refusal outranks a reopen recorded before the retry (seed %d)", lost, trials, seed)
	}
}
