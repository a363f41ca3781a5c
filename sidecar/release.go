package sidecar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// releaseAnswer is POST /v1/release's answer.
type releaseAnswer struct {
	// Released are the destinations, of every sink, whose local state was
	// dropped; Retained those kept because records kept landing in them
	// (mirror.ReleaseSummary).
	Released []coverage.Destination `json:"released"`
	Retained []coverage.Destination `json:"retained"`
	// Checkpoints and Batches are what the checkpoints run first committed.
	Checkpoints int    `json:"checkpoints"`
	Batches     uint64 `json:"batches"`
}

// wirePartition is a partition to release as sent.
type wirePartition struct {
	Topic     *string      `json:"topic"`
	Partition *json.Number `json:"partition"`
}

var partitionFields = wireFields{
	names:   []string{"topic", "partition"},
	numbers: []bool{false, true},
	what:    "topic and partition",
}

// release is POST /v1/release: the body is a JSON array of {"topic",
// "partition"}, the partitions this pod no longer owns; Mirror.Release
// checkpoints them and drops their local state, of every sink. The
// pipeline calls it on a partition's revocation, once it stopped writing
// those partitions.
func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	if s.shuttingDown(w, r) {
		return // the final checkpoint follows; the next owner reads the durable tier
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			s.fail(w, r, http.StatusUnsupportedMediaType, apiError{Error: fmt.Sprintf("Content-Type %q: send application/json, an array of {\"topic\",\"partition\"}", ct), Rule: "content-type"})
			return
		}
	}
	parts, ee := decodePartitions(r.Body)
	if ee != nil {
		e := apiError{Error: ee.Error() + "; nothing was released", Rule: ee.rule}
		if ee.entry >= 0 {
			e.Entry = &ee.entry
		}
		s.fail(w, r, ruleStatus(ee.rule), e)
		return
	}
	sum, err := s.opts.Mirror.Release(r.Context(), parts)
	if err != nil {
		code, rule := http.StatusServiceUnavailable, "durable-tier"
		if errors.Is(err, coverage.ErrInvalidDestination) {
			code, rule = http.StatusBadRequest, "invalid-destination"
		}
		s.fail(w, r, code, apiError{Error: err.Error(), Rule: rule})
		return
	}
	writeJSON(w, http.StatusOK, releaseAnswer{Released: sum.Released, Retained: sum.Retained,
		Checkpoints: sum.Checkpoint.Checkpoints, Batches: sum.Checkpoint.Batches})
}

// decodePartitions reads the body as strictly as a record request: one
// JSON array, each entry an object with exactly topic (a valid topic name)
// and partition (digits, 0 to 2147483647), all validated before any is
// released.
func decodePartitions(body io.Reader) ([]coverage.TopicPartition, *entryError) {
	tr := &trackedReader{r: body}
	raw, err := io.ReadAll(tr)
	if err != nil {
		return nil, readError(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	var raws []json.RawMessage
	if err := dec.Decode(&raws); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &entryError{entry: -1, rule: "type", err: errors.New(`the body is not a JSON array of partitions: send [{"topic": "orders", "partition": 0}, ...]`)}
		}
		return nil, &entryError{entry: -1, rule: "json", err: fmt.Errorf("the body is not JSON: %w", err)}
	}
	if raws == nil {
		return nil, &entryError{entry: -1, rule: "type", err: errors.New("the body is null, not a JSON array of partitions: send [] for none")}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, &entryError{entry: -1, rule: "json", err: errors.New("the body has more after the JSON array: send one array")}
	}
	out := make([]coverage.TopicPartition, len(raws))
	for i, raw := range raws {
		tp, ee := decodePartition(raw)
		if ee != nil {
			ee.entry = i
			return nil, ee
		}
		out[i] = tp
	}
	return out, nil
}

func decodePartition(raw json.RawMessage) (coverage.TopicPartition, *entryError) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var w wirePartition
	if err := dec.Decode(&w); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field == "":
			return coverage.TopicPartition{}, &entryError{rule: "type", err: fmt.Errorf(`an entry is an object {"topic","partition"}, not a JSON %s`, te.Value)}
		case errors.As(err, &te):
			return coverage.TopicPartition{}, &entryError{rule: "type", err: fmt.Errorf("field %q is a JSON %s; want a %s", te.Field, te.Value, wantType(te.Field))}
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return coverage.TopicPartition{}, &entryError{rule: "unknown-field", err: fmt.Errorf("%s: the fields are topic and partition", strings.TrimPrefix(err.Error(), "json: "))}
		}
		return coverage.TopicPartition{}, &entryError{rule: "json", err: err}
	}
	if ferr := checkFields(raw, partitionFields); ferr != nil {
		return coverage.TopicPartition{}, ferr
	}
	switch {
	case w.Topic == nil:
		return coverage.TopicPartition{}, &entryError{rule: "missing-field", err: errors.New(`field "topic" is missing: every entry has topic and partition`)}
	case w.Partition == nil:
		return coverage.TopicPartition{}, &entryError{rule: "missing-field", err: errors.New(`field "partition" is missing: every entry has topic and partition`)}
	}
	part, err := parsePartition(w.Partition.String())
	if err != nil {
		return coverage.TopicPartition{}, &entryError{rule: "partition", err: err}
	}
	// The record routes' rules for a topic name (any valid sink stands in).
	d := coverage.Destination{Sink: coverage.RawSink, Topic: *w.Topic, Partition: part}
	if err := d.Validate(); err != nil {
		return coverage.TopicPartition{}, &entryError{rule: "invalid-destination", err: err}
	}
	return coverage.TopicPartition{Topic: d.Topic, Partition: part}, nil
}
