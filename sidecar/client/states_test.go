package client

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/memstates"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/sidecar"
)

// RecordStates through faults that lose the answer after the sidecar
// recorded (a reset connection, the store's lost answer as a 503) and
// faults before it: the retries carry the same IDs, so the durable tier
// holds exactly one event per entry, and no coverage.
func TestRecordStatesRetriesKeepOneEventPerID(t *testing.T) {
	r := rand.New(rand.NewPCG(testseed.Seed(t), 37))
	store := memstates.New()
	var requests atomic.Int64
	var faults []string
	p := startPod(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			n := int(requests.Add(1) - 1)
			fault := ""
			if n < len(faults) {
				fault = faults[n]
			}
			switch fault {
			case "reset":
				resetConn(t, w)
			case "recorded-then-reset":
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					t.Errorf("the recorded request answered %d %s", rec.Code, rec.Body)
				}
				resetConn(t, w)
			case "store-lost-answer":
				store.LoseAnswers(1)
				h.ServeHTTP(w, req)
			default:
				h.ServeHTTP(w, req)
			}
		})
	}, func(o *sidecar.Options) { o.Durable = memstates.With(o.Durable, store) })
	c := p.client(t, "tcp", func(o *Options) { o.MaxAttempts = 6 })
	kinds := []string{"reset", "recorded-then-reset", "store-lost-answer"}
	want := 0
	for round := range 20 {
		faults = nil
		for range r.IntN(4) {
			faults = append(faults, kinds[r.IntN(len(kinds))])
		}
		requests.Store(0)
		var entries []StateEntry
		for i := range 1 + r.IntN(5) {
			s := uint64(r.IntN(1000))
			entries = append(entries, StateEntry{Destination: coverage.Destination{Sink: "lake", Topic: "orders", Partition: int32(i % 2)},
				Range: coverage.Range{Start: s, End: s + 1 + uint64(r.IntN(9))}, State: []gapstate.State{gapstate.Refused, gapstate.Unrecoverable, gapstate.Reopened}[r.IntN(3)],
				Reason: "400: bad row"})
		}
		events, err := c.RecordStates(ctx, entries)
		if err != nil {
			t.Fatalf("round %d, faults %v: %v", round, faults, err)
		}
		want += len(entries)
		if got := len(store.Events()); got != want {
			t.Fatalf("round %d, faults %v: the store holds %d events, want %d: a retry recorded an entry twice", round, faults, got, want)
		}
		for i, e := range events {
			if e.Range != entries[i].Range || e.State != entries[i].State || e.By != "pod-a" {
				t.Fatalf("round %d: event %d is %+v for %+v", round, i, e, entries[i])
			}
		}
	}
	if got := p.state(t); len(got) != 0 {
		t.Errorf("recording states recorded coverage: %v", got)
	}
	// A waiver is refused before anything is recorded, and not retried.
	requests.Store(0)
	faults = nil
	_, err := c.RecordStates(ctx, []StateEntry{{Destination: coverage.Destination{Sink: "lake", Topic: "orders"}, Range: coverage.Range{Start: 0, End: 1}, State: gapstate.Waived, Reason: "x"}})
	var ce *Error
	if !errors.As(err, &ce) || ce.Status != http.StatusBadRequest || requests.Load() != 1 {
		t.Errorf("a waiver: %v after %d requests; want one 400", err, requests.Load())
	}
	if got := len(store.Events()); got != want {
		t.Errorf("a refused waiver left %d events, want %d", got, want)
	}
}
