package sidecar

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/wirejson"
)

// wireRecord is an entry as sent. Numbers stay json.Number so that a
// partition past int32, a negative or fractional number or one past uint64
// are named as such, never wrapped or truncated.
type wireRecord struct {
	Sink      *string      `json:"sink"`
	Topic     *string      `json:"topic"`
	Partition *json.Number `json:"partition"`
	Start     *json.Number `json:"start"`
	End       *json.Number `json:"end"`
}

// entryError is an invalid entry: its index and the rule it broke.
type entryError struct {
	entry int // -1: the body as a whole
	rule  string
	err   error
}

func (e *entryError) Error() string {
	if e.entry < 0 {
		return e.err.Error()
	}
	return fmt.Sprintf("entry %d: %v", e.entry, e.err)
}

// DecodeRecords reads a JSON array of entries, or NDJSON (one entry per
// line) when ndjson is set, and validates every entry: exact field names
// (sink, topic, partition, start, end, all required), a partition from 0 to
// 2147483647, start and end unsigned 64-bit integers with end at most
// coverage.MaxBatchEnd, and coverage.ValidateNew (the write surfaces' name rule). The first invalid
// entry fails the whole body: all or nothing.
//
// The body is read whole first, so that a body cut short or timed out is
// blamed on the transport, never on the entry being read then. The plain
// form is decoded in one pass (decodeFast); anything else by
// encoding/json, whose errors name the entry and the rule.
func DecodeRecords(body io.Reader, ndjson bool) ([]coverage.Entry, error) {
	return decodeBody(body, -1, ndjson)
}

// bodyBufs are read buffers for record bodies. A body is garbage once
// decoded (the entries copy every name they keep), so a request reuses one
// rather than growing a fresh slice through io.ReadAll's doublings.
var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody bounds the buffers kept in bodyBufs, and how far a body's
// declared length presizes one: a rare large body is not held for ever.
const maxPooledBody = 1 << 20

// decodeBody is DecodeRecords of a body of declared length size (-1:
// unknown), read into a pooled buffer.
func decodeBody(body io.Reader, size int64, ndjson bool) ([]coverage.Entry, error) {
	buf := bodyBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody {
			buf.Reset()
			bodyBufs.Put(buf)
		}
	}()
	buf.Reset()
	if size > 0 && size <= maxPooledBody {
		buf.Grow(int(size) + bytes.MinRead) // ReadFrom wants MinRead free to read on
	}
	if _, err := buf.ReadFrom(body); err != nil {
		return nil, readError(err)
	}
	raw := buf.Bytes()
	if recs, ok := decodeFast(raw, ndjson); ok {
		return recs, nil
	}
	return decodeRecords(bytes.NewReader(raw), ndjson)
}

func decodeRecords(body io.Reader, ndjson bool) ([]coverage.Entry, error) {
	dec := json.NewDecoder(body)
	dec.UseNumber()
	var raws []json.RawMessage
	if ndjson {
		for {
			var raw json.RawMessage
			err := dec.Decode(&raw)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, bodyError(len(raws), err)
			}
			raws = append(raws, raw)
		}
	} else {
		if err := dec.Decode(&raws); err != nil {
			return nil, bodyError(-1, err)
		}
		if raws == nil { // null: encoding/json leaves the slice alone
			return nil, &entryError{entry: -1, rule: "type", err: errors.New("the body is null, not a JSON array of entries: send [] for none")}
		}
		if _, err := dec.Token(); !errors.Is(err, io.EOF) {
			return nil, &entryError{entry: -1, rule: "json", err: errors.New("the body has more after the JSON array: send one array, or NDJSON with Content-Type application/x-ndjson")}
		}
	}
	out := make([]coverage.Entry, len(raws))
	for i, raw := range raws {
		rec, err := decodeRecord(raw)
		if err != nil {
			err.entry = i
			return nil, err
		}
		out[i] = rec
	}
	return out, nil
}

func bodyError(entry int, err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &entryError{entry: -1, rule: "body-too-large", err: fmt.Errorf("the body is larger than %d bytes: send smaller batches", mbe.Limit)}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &entryError{entry: -1, rule: "type", err: errors.New("the body is not a JSON array of entries: send [{\"sink\",\"topic\",\"partition\",\"start\",\"end\"}, ...], or NDJSON with Content-Type application/x-ndjson")}
	}
	if entry >= 0 {
		return &entryError{entry: entry, rule: "json", err: fmt.Errorf("not JSON: %w", err)}
	}
	return &entryError{entry: -1, rule: "json", err: fmt.Errorf("the body is not JSON: %w", err)}
}

func decodeRecord(raw json.RawMessage) (coverage.Entry, *entryError) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var w wireRecord
	if err := dec.Decode(&w); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field == "":
			return coverage.Entry{}, &entryError{rule: "type", err: fmt.Errorf("an entry is an object {\"sink\",\"topic\",\"partition\",\"start\",\"end\"}, not a JSON %s", te.Value)}
		case errors.As(err, &te):
			return coverage.Entry{}, &entryError{rule: "type", err: fmt.Errorf("field %q is a JSON %s; want a %s", te.Field, te.Value, wantType(te.Field))}
		case strings.HasPrefix(err.Error(), "json: unknown field"):
			return coverage.Entry{}, &entryError{rule: "unknown-field", err: fmt.Errorf("%s: the fields are sink, topic, partition, start and end", strings.TrimPrefix(err.Error(), "json: "))}
		}
		return coverage.Entry{}, &entryError{rule: "json", err: err}
	}
	if ferr := checkFields(raw, recordFields); ferr != nil {
		return coverage.Entry{}, ferr
	}
	switch {
	case w.Sink == nil:
		return coverage.Entry{}, missing("sink")
	case w.Topic == nil:
		return coverage.Entry{}, missing("topic")
	case w.Partition == nil:
		return coverage.Entry{}, missing("partition")
	case w.Start == nil:
		return coverage.Entry{}, missing("start")
	case w.End == nil:
		return coverage.Entry{}, missing("end")
	}
	part, err := parsePartition(w.Partition.String())
	if err != nil {
		return coverage.Entry{}, &entryError{rule: "partition", err: err}
	}
	start, perr := parseBatch("start", *w.Start)
	if perr != nil {
		return coverage.Entry{}, perr
	}
	end, perr := parseBatch("end", *w.End)
	if perr != nil {
		return coverage.Entry{}, perr
	}
	rec := coverage.Entry{Destination: coverage.Destination{Sink: *w.Sink, Topic: *w.Topic, Partition: part}, Range: coverage.Range{Start: start, End: end}}
	if end > coverage.MaxBatchEnd {
		return coverage.Entry{}, &entryError{rule: "max-batch-end", err: fmt.Errorf("end %d is past %d, the largest batch end the durable tier stores", end, uint64(coverage.MaxBatchEnd))}
	}
	if verr := coverage.ValidateNew(rec.Destination, rec.Range); verr != nil {
		rule := "invalid-range"
		if errors.Is(verr, coverage.ErrInvalidDestination) {
			rule = "invalid-destination"
		}
		return coverage.Entry{}, &entryError{rule: rule, err: verr}
	}
	return rec, nil
}

func wantType(field string) string {
	if field == "sink" || field == "topic" {
		return "string"
	}
	return "number"
}

func missing(field string) *entryError {
	return &entryError{rule: "missing-field", err: fmt.Errorf("field %q is missing: every entry has sink, topic, partition, start and end", field)}
}

func parseBatch(field string, n json.Number) (uint64, *entryError) {
	v, err := strconv.ParseUint(n.String(), 10, 64)
	if err != nil {
		return 0, &entryError{rule: "uint64", err: fmt.Errorf("%s %s is not an unsigned 64-bit integer (0 to 18446744073709551615, no sign, fraction or exponent)", field, n)}
	}
	return v, nil
}

// wireFields are an object's exact wire names and which of them are
// numbers; what is a field the object lists, how is for error messages.
type wireFields struct {
	names   []string
	numbers []bool
	what    string
}

var recordFields = wireFields{
	names:   []string{"sink", "topic", "partition", "start", "end"},
	numbers: []bool{false, false, true, true, true},
	what:    "sink, topic, partition, start and end",
}

// checkFields applies wirejson.Check: the record API's strict reading of
// what encoding/json forgives.
func checkFields(raw []byte, f wireFields) *entryError {
	if e := wirejson.Check(raw, wirejson.Fields{Names: f.names, Numbers: f.numbers, What: f.what}); e != nil {
		return &entryError{rule: e.Rule, err: e.Err}
	}
	return nil
}

// parsePartition parses a partition: digits only, from 0 to 2147483647.
// A sign is refused, "-0" and "+1" included: one partition, one spelling.
func parsePartition(v string) (int32, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt32 || v == "" || v[0] < '0' || v[0] > '9' {
		return 0, fmt.Errorf("partition %s is not an integer from 0 to 2147483647 (digits only, no sign)", v)
	}
	return int32(n), nil
}

// recordsResult is the answer to a record request that recorded everything.
type recordsResult struct {
	Recorded int `json:"recorded"`
}

// records is POST /v1/records: validate every entry, then record each in
// the local tier. The caller asserts every entry was durably acknowledged
// by its sink.
func (s *Server) records(w http.ResponseWriter, r *http.Request) {
	if s.shuttingDown(w, r) {
		return
	}
	ndjson := false
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		switch {
		case err == nil && mt == "application/json":
		case err == nil && (mt == "application/x-ndjson" || mt == "application/jsonl"):
			ndjson = true
		default:
			s.fail(w, r, http.StatusUnsupportedMediaType, apiError{Error: fmt.Sprintf("Content-Type %q: send application/json (an array) or application/x-ndjson (one entry per line)", ct), Rule: "content-type"})
			return
		}
	}
	recs, err := decodeBody(r.Body, r.ContentLength, ndjson)
	if err != nil {
		var ee *entryError
		if !errors.As(err, &ee) {
			s.fail(w, r, http.StatusBadRequest, apiError{Error: err.Error(), Rule: "json"})
			return
		}
		e := apiError{Error: ee.Error() + "; nothing was recorded", Rule: ee.rule}
		if ee.entry >= 0 {
			e.Entry = &ee.entry
		}
		s.fail(w, r, ruleStatus(ee.rule), e)
		return
	}
	// Not cancelled with the request: a client gone midway would otherwise
	// leave a batch half recorded for no reason.
	ctx := context.WithoutCancel(r.Context())
	if !s.gate.enter() {
		s.refuse(w, r, "shutting down: nothing was recorded; retry on the next process")
		return
	}
	i, err := s.opts.Mirror.RecordBatch(ctx, recs)
	carried := s.gate.leave()
	if err != nil {
		s.failRecording(w, r, recs, i, err)
		return
	}
	if !carried {
		// Recorded in the local tier, but perhaps after the final
		// checkpoint began: a 200 would promise what it may not carry.
		s.refuse(w, r, "shutting down: recorded in the local tier after the final checkpoint began, which may not carry it; retry (recording twice is harmless)")
		return
	}
	s.counters.records.WithLabelValues(routeRecords).Add(float64(len(recs)))
	writeJSON(w, http.StatusOK, recordsResult{Recorded: len(recs)})
}

// failRecording answers a request whose entries from i on are not recorded
// because the local tier failed. They may be held in memory (a failed write
// leaves them covered and staged), but none past i is recorded as a
// Record's nil promises, so Recorded is i: retrying from it is always
// harmless (coverage is a union) and never leaves a hole.
func (s *Server) failRecording(w http.ResponseWriter, r *http.Request, recs []coverage.Entry, i int, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, coverage.ErrUnavailable) || errors.Is(err, coverage.ErrClosed) || errors.Is(err, coverage.ErrCorrupt) {
		code = http.StatusServiceUnavailable
	}
	if i < 0 || i >= len(recs) {
		// A count of all of them with an error: their write failed, and a
		// client resuming from there would skip entries a crash may lose.
		i = 0
	}
	s.counters.records.WithLabelValues(routeRecords).Add(float64(i))
	done := "none are recorded"
	if i > 0 {
		done = fmt.Sprintf("entries 0 to %d are recorded", i-1)
	}
	s.fail(w, r, code, apiError{
		Error: fmt.Sprintf("entry %d: %v; %s, %d and later are not (they may be held in memory only, not on the local tier's disk): retry from entry %d once the local tier is back", i, err, done, i, i),
		Entry: &i, Rule: "local-tier", Recorded: &i,
	})
}
