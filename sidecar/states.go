package sidecar

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// MaxStatesPerRequest bounds the entries of one POST /v1/states.
const MaxStatesPerRequest = 1000

// stateEntry is one entry of POST /v1/states. ID is optional: a client
// that sets it makes its retries idempotent (one event per ID).
type stateEntry struct {
	ID        string         `json:"id"`
	Sink      string         `json:"sink"`
	Topic     string         `json:"topic"`
	Partition *int32         `json:"partition"`
	Start     *uint64        `json:"start"`
	End       *uint64        `json:"end"`
	State     gapstate.State `json:"state"`
	Reason    string         `json:"reason"`
}

type statesBody struct {
	States []stateEntry `json:"states"`
}

// statesAnswer is POST /v1/states' answer: the events as recorded.
type statesAnswer struct {
	Recorded int              `json:"recorded"`
	Events   []gapstate.Event `json:"events"`
}

// states is POST /v1/states: gap states a pipeline decided (a sink refused
// batches for ever, raw lost them) or an operator's reopen, written to the
// local tier (synced) before the answer and on to the durable tier's
// StateStore at once when it answers, else by the next checkpoint
// (mirror.Mirror.RecordStates): a 200 means durable on the pod's disk,
// so a durable tier that is down does not fail the request. Waivers
// are an operator's act with a name and go through `covmirror waive`.
// Nothing here touches coverage.
func (s *Server) states(w http.ResponseWriter, r *http.Request) {
	if s.shuttingDown(w, r) {
		return
	}
	events, err := s.decodeStates(r.Body, time.Now())
	if err != nil {
		code, rule := http.StatusBadRequest, "invalid-state"
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			code, rule = http.StatusRequestEntityTooLarge, "too-large"
		}
		s.fail(w, r, code, apiError{Error: err.Error() + "; nothing was recorded", Rule: rule})
		return
	}
	if err := s.opts.Mirror.RecordStates(r.Context(), events); err != nil {
		if errors.Is(err, durable.ErrNoStates) {
			s.fail(w, r, http.StatusNotImplemented, apiError{Error: err.Error(), Rule: "no-states"})
			return
		}
		if errors.Is(err, gapstate.ErrIDTaken) {
			s.fail(w, r, http.StatusConflict, apiError{Error: err.Error() + "; nothing was recorded", Rule: "id-taken"})
			return
		}
		s.fail(w, r, http.StatusServiceUnavailable, apiError{Error: fmt.Sprintf("recording %d gap states in the local tier: %v; they may or may not be recorded: retry with the same ids", len(events), err), Rule: "durable"})
		return
	}
	s.opts.Logger.Info("gap states recorded", "count", len(events), "first", fmt.Sprintf("%q %v %s", events[0].Destination.String(), events[0].Range, events[0].State))
	writeJSON(w, http.StatusOK, statesAnswer{Recorded: len(events), Events: events})
}

// decodeStates reads and validates a POST /v1/states body into events
// decided now by this pod.
func (s *Server) decodeStates(body io.Reader, now time.Time) ([]gapstate.Event, error) {
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	var b statesBody
	if err := dec.Decode(&b); err != nil {
		return nil, fmt.Errorf("the body is not {\"states\": [{\"sink\", \"topic\", \"partition\", \"start\", \"end\", \"state\", \"reason\"}, ...]}: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("the body has more after the JSON object: send one object")
	}
	switch {
	case len(b.States) == 0:
		return nil, errors.New("states is empty")
	case len(b.States) > MaxStatesPerRequest:
		return nil, fmt.Errorf("%d states in one request, more than %d: split them", len(b.States), MaxStatesPerRequest)
	}
	at := now.UTC().Truncate(time.Microsecond)
	events := make([]gapstate.Event, 0, len(b.States))
	for i, e := range b.States {
		if e.Partition == nil || e.Start == nil || e.End == nil {
			return nil, fmt.Errorf("state %d: partition, start and end are required", i)
		}
		if e.State == gapstate.Waived {
			return nil, fmt.Errorf("state %d: a waiver is an operator's decision: use `covmirror waive` with a reason", i)
		}
		id := e.ID
		if id == "" {
			id = gapstate.NewID()
		}
		ev := gapstate.Event{
			ID: id, Destination: coverage.Destination{Sink: e.Sink, Topic: e.Topic, Partition: *e.Partition},
			Range: coverage.Range{Start: *e.Start, End: *e.End}, State: e.State, Reason: e.Reason,
			By: s.opts.Mirror.Writer(), At: at,
		}
		err := ev.Validate()
		if err == nil {
			err = coverage.ValidateNew(ev.Destination, ev.Range) // the write surfaces' name rule
		}
		if err != nil {
			return nil, fmt.Errorf("state %d: %w", i, err)
		}
		events = append(events, ev)
	}
	return events, nil
}
