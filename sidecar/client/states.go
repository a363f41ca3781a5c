package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
)

// StateEntry is one gap state to record with RecordStates: a decision
// about Range of Destination that a replay cannot undo (package gapstate).
type StateEntry struct {
	Destination coverage.Destination
	Range       coverage.Range
	// State is gapstate.Refused, gapstate.Unrecoverable or
	// gapstate.Reopened; a waiver goes through `covmirror waive`.
	State  gapstate.State
	Reason string
}

type wireState struct {
	ID        string         `json:"id"`
	Sink      string         `json:"sink"`
	Topic     string         `json:"topic"`
	Partition int32          `json:"partition"`
	Start     uint64         `json:"start"`
	End       uint64         `json:"end"`
	State     gapstate.State `json:"state"`
	Reason    string         `json:"reason"`
}

// RecordStates records gap states through the pod (POST /v1/states): all
// or nothing, durable once it returns nil (on the pod's disk, and in the
// durable tier by its next checkpoint at the latest). Each entry gets
// an event ID here, so a retry after a lost answer records each once. It
// never records coverage: a refused range stays a gap, out of the replay
// plan until reopened or covered. It returns the events as recorded.
func (c *Client) RecordStates(ctx context.Context, entries []StateEntry) ([]gapstate.Event, error) {
	const route = "POST /v1/states"
	if len(entries) == 0 {
		return nil, nil
	}
	wire := make([]wireState, len(entries))
	for i, e := range entries {
		if err := coverage.ValidateNew(e.Destination, e.Range); err != nil {
			return nil, &Error{Route: route, Rule: "invalid-destination", Entry: i, Recorded: -1,
				Message: fmt.Sprintf("entry %d: %v; nothing was sent or recorded", i, err)}
		}
		wire[i] = wireState{ID: gapstate.NewID(), Sink: e.Destination.Sink, Topic: e.Destination.Topic, Partition: e.Destination.Partition,
			Start: e.Range.Start, End: e.Range.End, State: e.State, Reason: e.Reason}
	}
	body, err := json.Marshal(map[string]any{"states": wire})
	if err != nil {
		return nil, fmt.Errorf("covmirror client: %s: encoding the states: %w", route, err)
	}
	var ans struct {
		Recorded *int             `json:"recorded"`
		Events   []gapstate.Event `json:"events"`
	}
	if err := c.call(ctx, http.MethodPost, "/v1/states", nil, body, &ans, nil); err != nil {
		return nil, err
	}
	if ans.Recorded == nil || *ans.Recorded != len(entries) || len(ans.Events) != len(entries) {
		return nil, &Error{Route: route, Status: http.StatusOK, Entry: -1, Recorded: -1,
			Message: fmt.Sprintf("the answer does not say all %d states were recorded: not the record API's answer; treat them as not recorded", len(entries))}
	}
	return ans.Events, nil
}
