package sidecar

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/mirror"
)

// checkpointResult is the answer to POST /v1/checkpoint.
type checkpointResult struct {
	Checkpoints     int     `json:"checkpoints"`
	Batches         uint64  `json:"batches"`
	Destinations    int     `json:"destinations"`
	Positions       int     `json:"positions"`
	DurationSeconds float64 `json:"duration_seconds"`
	// Joined: the request committed nothing of its own; a checkpoint that
	// began after it arrived carried its records, and the figures are that
	// checkpoint's (mirror.CheckpointSummary.Joined).
	Joined bool `json:"joined"`
}

// checkpoint is POST /v1/checkpoint: Mirror.Checkpoint now.
func (s *Server) checkpoint(w http.ResponseWriter, r *http.Request) {
	if s.shuttingDown(w, r) {
		return // the final checkpoint follows
	}
	sum, err := s.opts.Mirror.Checkpoint(r.Context())
	if err != nil {
		s.fail(w, r, http.StatusServiceUnavailable, apiError{Error: err.Error() + "; everything not committed stays pending in the local tier", Rule: "durable-tier"})
		return
	}
	writeJSON(w, http.StatusOK, checkpointResult{Checkpoints: sum.Checkpoints, Batches: sum.Batches,
		Destinations: sum.Destinations, Positions: sum.Positions, DurationSeconds: sum.Duration.Seconds(), Joined: sum.Joined})
}

// query parses the query string, answering 400 for a parameter given
// twice: the first would silently win over the second. topic-sinks alone
// is repeatable, one topic each (querySinks refuses a topic given twice).
func (s *Server) query(w http.ResponseWriter, r *http.Request) (url.Values, bool) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, apiError{Error: fmt.Sprintf("the query string is malformed: %v", err), Rule: "query"})
		return nil, false
	}
	for k, v := range q {
		if len(v) > 1 && k != "topic-sinks" {
			s.fail(w, r, http.StatusBadRequest, apiError{Error: fmt.Sprintf("query parameter %q is given %d times: give it once (one query per value)", k, len(v)), Rule: "query"})
			return nil, false
		}
	}
	return q, true
}

// queryPartition parses an optional partition parameter.
func queryPartition(v string) (*int32, error) {
	if v == "" {
		return nil, nil
	}
	p, err := parsePartition(v)
	if err != nil {
		return nil, err
	}
	return &p, nil
}

// positionPut is PUT /v1/positions/{source}'s body.
type positionPut struct {
	Partition *json.Number `json:"partition"`
	Cursor    *string      `json:"cursor"`
	RawEnd    *json.Number `json:"raw_end"`
}

var positionFields = wireFields{
	names:   []string{"partition", "cursor", "raw_end"},
	numbers: []bool{true, false, true},
	what:    "partition, cursor and raw_end",
}

// decodePositionPut reads PUT /v1/positions' body as strictly as a record
// entry: one object and nothing after it, exact field names each once,
// numbers as numbers, the cursor UTF-8 text.
func decodePositionPut(body io.Reader) (positionPut, *entryError) {
	tr := &trackedReader{r: body}
	p, err := decodePosition(tr)
	if err != nil && tr.err != nil {
		return p, readError(tr.err)
	}
	return p, err
}

func decodePosition(body io.Reader) (positionPut, *entryError) {
	var p positionPut
	dec := json.NewDecoder(body)
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		ee := bodyError(-1, err).(*entryError)
		if ee.rule == "json" {
			ee.err = fmt.Errorf("the body is not {\"partition\": P, \"cursor\": \"...\", \"raw_end\": N}: %w", err)
		}
		return p, ee
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return p, bodyError(-1, err).(*entryError)
		}
		return p, &entryError{entry: -1, rule: "json", err: errors.New("the body has more after the JSON object: send one object")}
	}
	inner := json.NewDecoder(bytes.NewReader(raw))
	inner.DisallowUnknownFields()
	inner.UseNumber()
	if err := inner.Decode(&p); err != nil {
		return p, &entryError{entry: -1, rule: "json", err: fmt.Errorf("the body is not {\"partition\": P, \"cursor\": \"...\", \"raw_end\": N}: %w", err)}
	}
	if ferr := checkFields(raw, positionFields); ferr != nil {
		ferr.entry = -1
		return p, ferr
	}
	return p, nil
}

// positionAnswer is GET /v1/positions/{source}'s answer. Found is false
// when no stored position is safe: the source starts from its beginning.
type positionAnswer struct {
	Source    string `json:"source"`
	Partition int32  `json:"partition"`
	Found     bool   `json:"found"`
	Cursor    string `json:"cursor,omitempty"`
	RawEnd    uint64 `json:"raw_end,omitempty"`
}

// sourceAllowed answers 404 or 409 for a source whose positions are not
// kept here, and reports whether it did not.
func (s *Server) sourceAllowed(w http.ResponseWriter, r *http.Request, source string) bool {
	err := coverage.CheckStoredSource(s.regimes, source)
	switch {
	case err == nil:
		return true
	case errors.Is(err, coverage.ErrBrokerManaged):
		s.fail(w, r, http.StatusConflict, apiError{Error: err.Error() + " (declared broker-managed in the configuration)", Rule: "broker-managed"})
	default:
		s.fail(w, r, http.StatusNotFound, apiError{Error: fmt.Sprintf("source %q is not configured: declare it with source.%s = stored in the configuration file, or --source %s=stored (COVMIRROR_SOURCES)", source, source, source), Rule: "unknown-source"})
	}
	return false
}

// putPosition is PUT /v1/positions/{source}: buffer the newest position of
// a stored source's partition, saved after the next checkpoint's coverage
// commit. raw_end is the end (exclusive) of the raw batches the cursor
// covers: the source resumes at batch raw_end.
func (s *Server) putPosition(w http.ResponseWriter, r *http.Request) {
	if s.shuttingDown(w, r) {
		return
	}
	source := r.PathValue("source")
	if !s.sourceAllowed(w, r, source) {
		return
	}
	body, perr := decodePositionPut(r.Body)
	if perr != nil {
		s.fail(w, r, ruleStatus(perr.rule), apiError{Error: perr.Error() + "; nothing was buffered", Rule: perr.rule})
		return
	}
	if body.Partition == nil || body.Cursor == nil || body.RawEnd == nil {
		s.fail(w, r, http.StatusBadRequest, apiError{Error: "partition, cursor and raw_end are required", Rule: "missing-field"})
		return
	}
	part, err := queryPartition(body.Partition.String())
	if err == nil && part == nil {
		err = errors.New("partition is empty")
	}
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error(), Rule: "partition"})
		return
	}
	end, err := strconv.ParseUint(body.RawEnd.String(), 10, 64)
	if err != nil || end == 0 || end > coverage.MaxBatchEnd {
		s.fail(w, r, http.StatusBadRequest, apiError{Error: fmt.Sprintf("raw_end %s is not an integer from 1 to %d (the end, exclusive, of the raw batches the cursor covers)", body.RawEnd, uint64(coverage.MaxBatchEnd)), Rule: "invalid-position"})
		return
	}
	pos := coverage.Position{Source: source, Partition: *part, Cursor: []byte(*body.Cursor), Batch: end - 1}
	if err := s.opts.Mirror.SavePosition(r.Context(), pos); err != nil {
		code, rule := http.StatusBadRequest, "invalid-position"
		if errors.Is(err, mirror.ErrNoPositionStore) {
			code, rule = http.StatusServiceUnavailable, "durable-tier"
		}
		s.fail(w, r, code, apiError{Error: err.Error(), Rule: rule})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"source": source, "partition": *part, "raw_end": end, "buffered": true})
}

// getPosition is GET /v1/positions/{source}?partition=P: the stored
// position to resume from, never one past a gap in raw's committed
// coverage (coverage.SafePosition over the durable tier).
func (s *Server) getPosition(w http.ResponseWriter, r *http.Request) {
	source := r.PathValue("source")
	if !s.sourceAllowed(w, r, source) {
		return
	}
	q, ok := s.query(w, r)
	if !ok {
		return
	}
	part, err := queryPartition(q.Get("partition"))
	if err == nil && part == nil {
		err = errors.New("partition= is required")
	}
	if err != nil {
		s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error(), Rule: "partition"})
		return
	}
	stored, err := s.opts.Positions.Positions(r.Context(), source, *part)
	if err != nil {
		s.fail(w, r, http.StatusServiceUnavailable, apiError{Error: err.Error(), Rule: "durable-tier"})
		return
	}
	rawDest := coverage.Destination{Sink: s.opts.Reference, Topic: source, Partition: *part}
	all, err := s.opts.Durable.Coverage(r.Context(), durable.Filter{Sink: rawDest.Sink, Topic: source, Partition: part})
	if err != nil {
		s.fail(w, r, http.StatusServiceUnavailable, apiError{Error: err.Error(), Rule: "durable-tier"})
		return
	}
	raw := all[rawDest]
	if raw == nil {
		raw = new(coverage.RangeSet)
	}
	ans := positionAnswer{Source: source, Partition: *part}
	if p, ok := coverage.SafePosition(stored, raw); ok {
		ans.Found, ans.Cursor, ans.RawEnd = true, string(p.Cursor), p.Batch+1
	}
	writeJSON(w, http.StatusOK, ans)
}
