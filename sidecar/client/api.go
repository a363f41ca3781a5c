package client

// The record API's routes besides POST /v1/records, with typed results.
// Each is retried as Record is: a checkpoint, a read, an extent reported
// or a position buffered twice is as harmless as a record.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/covmirror/covmirror/coverage"
)

// CheckpointResult is what POST /v1/checkpoint did.
type CheckpointResult struct {
	Checkpoints  int
	Batches      uint64
	Destinations int
	Positions    int
	Duration     time.Duration
	// Joined: this call committed nothing of its own; a checkpoint that
	// began after it arrived carried its records, and the figures are that
	// checkpoint's.
	Joined bool
}

// Checkpoint checkpoints the pod's local tier into the durable tier now.
// A durable tier that refuses it is a 503 (rule durable-tier), retried; what
// was not committed stays pending in the local tier.
func (c *Client) Checkpoint(ctx context.Context) (CheckpointResult, error) {
	var ans struct {
		Checkpoints     int     `json:"checkpoints"`
		Batches         uint64  `json:"batches"`
		Destinations    int     `json:"destinations"`
		Positions       int     `json:"positions"`
		DurationSeconds float64 `json:"duration_seconds"`
		Joined          bool    `json:"joined"`
	}
	if err := c.call(ctx, http.MethodPost, "/v1/checkpoint", nil, []byte{}, &ans, nil); err != nil {
		return CheckpointResult{}, err
	}
	return CheckpointResult{Checkpoints: ans.Checkpoints, Batches: ans.Batches, Destinations: ans.Destinations,
		Positions: ans.Positions, Duration: time.Duration(ans.DurationSeconds * float64(time.Second)), Joined: ans.Joined}, nil
}

// Kind is a gap's or a task's kind.
type Kind string

const (
	// KindReplay is a sink's gap: replay it from raw and record it after
	// the sink's ack.
	KindReplay Kind = "replay"
	// KindVerifyReference is a hole in raw's own coverage: read raw back
	// and record only what raw holds of it.
	KindVerifyReference Kind = "verify-reference"
)

// Gap is a committed gap, or a task of the plan, as `covmirror gaps
// --json` prints it.
type Gap struct {
	Sink      string `json:"sink"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     uint64 `json:"start"`
	End       uint64 `json:"end"`
	Kind      Kind   `json:"kind"`
}

// Destination is g's destination.
func (g Gap) Destination() coverage.Destination {
	return coverage.Destination{Sink: g.Sink, Topic: g.Topic, Partition: g.Partition}
}

// Range is g's range of batches.
func (g Gap) Range() coverage.Range { return coverage.Range{Start: g.Start, End: g.End} }

// Filter selects destinations; empty fields match everything.
type Filter struct {
	Sink, Topic string
	// Partition: nil, every partition.
	Partition *int32
}

func (f Filter) query() url.Values {
	q := url.Values{}
	if f.Sink != "" {
		q.Set("sink", f.Sink)
	}
	if f.Topic != "" {
		q.Set("topic", f.Topic)
	}
	if f.Partition != nil {
		q.Set("partition", strconv.FormatInt(int64(*f.Partition), 10))
	}
	return q
}

// GapsQuery is what Gaps and Plan look at.
type GapsQuery struct {
	Filter
	// Reference is raw's sink name. Zero value: the server's (serve's
	// reference, raw by default).
	Reference string
	// Sinks are the sinks every topic is written to, planned besides
	// those with rows. Zero value: the server's (serve's --sinks).
	Sinks []string
	// TopicSinks are the sinks each of its keys is written to, in place
	// of Sinks for that topic (an empty list: none named for it); the
	// sinks with rows of a topic are planned whatever is named. Sinks or
	// TopicSinks set replaces the server's pair (serve's --sinks and
	// --topic-sinks) whole. Zero value: the server's.
	TopicSinks map[string][]string
	// Extents are the source's acked extents: raw's holes are looked for
	// over them too, besides those the pod was told (PutExtents). Each is
	// sent with its Start, so the server's declared start of its topic
	// does not apply. Zero value: none but the pod's.
	Extents []coverage.Extent
}

// request is q as the API takes it at path: its query, body and method.
// A sink name holding a comma is refused (Status 0, rule query): the
// API's sinks parameter separates names by commas, and "lake,eu" would be
// asked as the sinks "lake" and "eu".
func (q GapsQuery) request(path string) (url.Values, []byte, string, error) {
	method := http.MethodGet
	if q.Extents != nil {
		method = http.MethodPost
	}
	for i, s := range q.Sinks {
		if strings.Contains(s, ",") {
			return nil, nil, method, &Error{Route: method + " " + path, Rule: "query", Entry: -1, Recorded: -1,
				Message: fmt.Sprintf("Sinks[%d], %q, holds a comma: the API's sinks parameter separates names by commas, so it cannot be asked for (leave it to the sinks with rows, or to serve's --sinks); nothing was sent", i, s)}
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(q.TopicSinks)) {
		bad := ""
		if strings.Contains(topic, "=") {
			bad = fmt.Sprintf("TopicSinks' topic %q holds an =: the API's topic-sinks parameter is TOPIC=SINK,SINK, split at the first =, so it cannot be asked for", topic)
		}
		for _, s := range q.TopicSinks[topic] {
			if bad == "" && strings.Contains(s, ",") {
				bad = fmt.Sprintf("TopicSinks[%q] holds %q, with a comma: the API's topic-sinks parameter separates names by commas, so it cannot be asked for", topic, s)
			}
		}
		if bad != "" {
			return nil, nil, method, &Error{Route: method + " " + path, Rule: "query", Entry: -1, Recorded: -1, Message: bad + "; nothing was sent"}
		}
	}
	v := q.query()
	if q.Reference != "" {
		v.Set("reference", q.Reference)
	}
	if len(q.Sinks) > 0 {
		v.Set("sinks", strings.Join(q.Sinks, ","))
	}
	for _, topic := range slices.Sorted(maps.Keys(q.TopicSinks)) {
		v.Add("topic-sinks", topic+"="+strings.Join(q.TopicSinks[topic], ","))
	}
	if q.Extents == nil {
		return v, nil, method, nil
	}
	body, err := json.Marshal(q.Extents)
	if err != nil {
		return nil, nil, method, fmt.Errorf("covmirror client: %s %s: encoding the extents: %w", method, path, err)
	}
	return v, body, method, nil
}

// Gaps are the committed gaps (GET or, with Extents, POST /v1/gaps), each
// with its kind.
func (c *Client) Gaps(ctx context.Context, q GapsQuery) ([]Gap, error) {
	v, body, method, err := q.request("/v1/gaps")
	if err != nil {
		return nil, err
	}
	var gaps []Gap
	if err := c.call(ctx, method, "/v1/gaps", v, body, &gaps, nil); err != nil {
		return nil, err
	}
	return gaps, nil
}

// PlanQuery is what Plan takes.
type PlanQuery struct {
	GapsQuery
	// MaxBatches cuts each task to at most this many batches. Zero value:
	// the server's default.
	MaxBatches uint64
	// MaxTasks bounds the tasks answered. Zero value: the server's
	// default.
	MaxTasks int
}

// Plan is a recovery plan.
type Plan struct {
	Tasks []Gap
	// Truncated: the plan holds MaxTasks of more tasks, taken in turn from
	// every destination with work. Recover them and plan again.
	Truncated bool
}

// Plan is the recovery plan (GET or, with Extents, POST /v1/plan): verify
// each verify-reference task against raw and record what raw holds of it;
// replay each replay task and record it after the sink's ack; checkpoint;
// plan again until the plan is empty.
func (c *Client) Plan(ctx context.Context, q PlanQuery) (Plan, error) {
	v, body, method, err := q.request("/v1/plan")
	if err != nil {
		return Plan{}, err
	}
	if q.MaxBatches > 0 {
		v.Set("max_batches", strconv.FormatUint(q.MaxBatches, 10))
	}
	if q.MaxTasks > 0 {
		v.Set("max_tasks", strconv.Itoa(q.MaxTasks))
	}
	var p Plan
	var h http.Header
	if err := c.call(ctx, method, "/v1/plan", v, body, &p.Tasks, &h); err != nil {
		return Plan{}, err
	}
	p.Truncated = h.Get("Covmirror-Plan-Truncated") != ""
	return p, nil
}

// Committed is the durable tier's committed coverage of the destinations
// f selects (GET /v1/committed); a destination without coverage is absent.
func (c *Client) Committed(ctx context.Context, f Filter) (map[coverage.Destination]*coverage.RangeSet, error) {
	var rows []Gap // the same fields, without a kind
	if err := c.call(ctx, http.MethodGet, "/v1/committed", f.query(), nil, &rows, nil); err != nil {
		return nil, err
	}
	out := map[coverage.Destination]*coverage.RangeSet{}
	for _, r := range rows {
		d := r.Destination()
		set := out[d]
		if set == nil {
			set = new(coverage.RangeSet)
			out[d] = set
		}
		if err := set.Add(r.Range()); err != nil {
			return nil, &Error{Route: "GET /v1/committed", Status: http.StatusOK, Entry: -1, Recorded: -1,
				Message: fmt.Sprintf("a row of %s is not a range: %v", d, err)}
		}
	}
	return out, nil
}

// ExtentsResult is what PUT /v1/extents answered.
type ExtentsResult struct {
	// Extents is how many partitions' extents the pod keeps.
	Extents int `json:"extents"`
	// Changed is how many of those sent widened or added one.
	Changed int `json:"changed"`
}

// PutExtents reports the source's acked extents to the pod, which keeps
// (in memory) the widest reported per partition for every later look for
// raw's holes. Each is sent with its Start.
func (c *Client) PutExtents(ctx context.Context, extents []coverage.Extent) (ExtentsResult, error) {
	if extents == nil {
		extents = []coverage.Extent{}
	}
	body, err := json.Marshal(extents)
	if err != nil {
		return ExtentsResult{}, fmt.Errorf("covmirror client: PUT /v1/extents: encoding the extents: %w", err)
	}
	var ans ExtentsResult
	err = c.call(ctx, http.MethodPut, "/v1/extents", nil, body, &ans, nil)
	return ans, err
}

// Extents are the extents the pod keeps (GET /v1/extents).
func (c *Client) Extents(ctx context.Context) ([]coverage.Extent, error) {
	var es []coverage.Extent
	err := c.call(ctx, http.MethodGet, "/v1/extents", nil, nil, &es, nil)
	return es, err
}

// Position is a stored source's position to resume from.
type Position struct {
	// Found is false when no saved position is safe: start the source from
	// its beginning.
	Found bool `json:"found"`
	// Cursor is the source's own cursor, as saved.
	Cursor string `json:"cursor"`
	// RawEnd is the end (exclusive) of the raw batches the cursor covers.
	RawEnd uint64 `json:"raw_end"`
}

// sourcePath is the source's URL path: "." and ".." as %2E, which a server
// would otherwise clean out of the path.
func sourcePath(source string) string {
	if source == "." || source == ".." {
		return "/v1/positions/" + strings.Repeat("%2E", len(source))
	}
	return "/v1/positions/" + url.PathEscape(source)
}

// PutPosition buffers a stored source's position in the pod, saved after
// its next checkpoint's coverage commit. rawEnd is the end (exclusive) of
// the raw batches cursor covers: call it only once raw durably holds them.
// A broker-managed source is 409 (rule broker-managed), an undeclared one
// 404 (unknown-source).
func (c *Client) PutPosition(ctx context.Context, source string, partition int32, cursor string, rawEnd uint64) error {
	if !utf8.ValidString(cursor) {
		// encoding/json would replace its bytes: the source would resume
		// from another cursor than the one saved.
		return &Error{Route: "PUT /v1/positions", Rule: "invalid-utf8", Entry: -1, Recorded: -1,
			Message: "the cursor is not valid UTF-8 text (encode a binary cursor, e.g. as base64); nothing was sent or buffered"}
	}
	body, err := json.Marshal(struct {
		Partition int32  `json:"partition"`
		Cursor    string `json:"cursor"`
		RawEnd    uint64 `json:"raw_end"`
	}{partition, cursor, rawEnd})
	if err != nil {
		return fmt.Errorf("covmirror client: PUT /v1/positions: encoding the position: %w", err)
	}
	return c.call(ctx, http.MethodPut, sourcePath(source), nil, body, nil, nil)
}

// Position is the position a stored source's partition resumes from: the
// furthest saved one raw's committed coverage reaches without a gap.
func (c *Client) Position(ctx context.Context, source string, partition int32) (Position, error) {
	var p Position
	q := url.Values{"partition": {strconv.FormatInt(int64(partition), 10)}}
	err := c.call(ctx, http.MethodGet, sourcePath(source), q, nil, &p, nil)
	return p, err
}
