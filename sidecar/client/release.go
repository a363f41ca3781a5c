package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"unicode/utf8"

	"github.com/covmirror/covmirror/coverage"
)

// ReleaseResult is what POST /v1/release did.
type ReleaseResult struct {
	// Released are the destinations, of every sink, whose local state the
	// pod dropped: the durable tier holds every range of theirs.
	Released []coverage.Destination `json:"released"`
	// Retained are those the pod kept because records kept landing in
	// them while it released: stop writing those partitions and release
	// them again.
	Retained []coverage.Destination `json:"retained"`
	// Checkpoints and Batches are what the checkpoints run first committed.
	Checkpoints int    `json:"checkpoints"`
	Batches     uint64 `json:"batches"`
}

// Release tells the pod it no longer owns parts: it checkpoints their
// pending coverage into the durable tier and then drops their local state,
// of every sink, never before the durable tier holds it. Call it on a
// partition's revocation, once the pipeline stopped writing those
// partitions. A durable tier that refuses the checkpoint is a 503 (rule
// durable-tier), retried; nothing uncommitted is dropped. Releasing twice
// is harmless, as recording twice is. No partitions is a nil error without
// a request.
func (c *Client) Release(ctx context.Context, parts []coverage.TopicPartition) (ReleaseResult, error) {
	const route = "POST /v1/release"
	if c.closed.Load() {
		return ReleaseResult{}, fmt.Errorf("%w: %s", ErrClosed, route)
	}
	if len(parts) == 0 {
		return ReleaseResult{}, nil
	}
	type wirePartition struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
	}
	wire := make([]wirePartition, len(parts))
	for i, tp := range parts {
		// encoding/json would replace the bytes, and the pod release
		// another topic than the caller's.
		if !utf8.ValidString(tp.Topic) {
			return ReleaseResult{}, &Error{Route: route, Rule: "invalid-utf8", Entry: i, Recorded: -1,
				Message: fmt.Sprintf("entry %d: the topic name is not valid UTF-8; nothing was sent or released", i)}
		}
		wire[i] = wirePartition{Topic: tp.Topic, Partition: tp.Partition}
	}
	body, err := json.Marshal(wire)
	if err != nil {
		return ReleaseResult{}, fmt.Errorf("covmirror client: %s: encoding the partitions: %w", route, err)
	}
	var ans ReleaseResult
	if err := c.call(ctx, http.MethodPost, "/v1/release", nil, body, &ans, nil); err != nil {
		return ReleaseResult{}, err
	}
	if ans.Released == nil || ans.Retained == nil {
		return ReleaseResult{}, &Error{Route: route, Status: http.StatusOK, Entry: -1, Recorded: -1,
			Message: "the answer lists no released and retained destinations: not the record API's answer; check Options.Address names the pod"}
	}
	return ans, nil
}
