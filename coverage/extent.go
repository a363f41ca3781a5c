package coverage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/covmirror/covmirror/internal/wirejson"
)

// ErrInvalidExtent: a source extent that is not a valid [start, end) of one
// (topic, partition), or a partition given twice. Nothing was used.
var ErrInvalidExtent = errors.New("invalid source extent")

// Extent is the source's acknowledged extent of one (topic, partition): the
// batch ids [Start, End) the source has acknowledged. Start is the stream's
// first batch id (0 unless the stream declares another); End is the first
// batch id the source has not acknowledged: for a broker-managed source the
// broker's committed position as the pipeline maps it to batch ids, for a
// stored source what its saved positions cover. Start == End: nothing acked.
//
// The pipeline acks the source only once raw is durable, so raw holds every
// batch of the extent even where raw's own coverage of it was never
// checkpointed. Readers therefore look for raw's holes over the whole
// extent: a lost first or last stretch of a stream is a hole to verify, not
// an invisible one. An End past what was really acked would make raw's
// coverage lead; an End behind it only hides the newest stretch until the
// next look, so pass the broker's committed position, never its head.
//
// The JSON form is {"topic","partition","start","end"}, start optional.
type Extent struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Start     uint64 `json:"start"`
	End       uint64 `json:"end"`
}

// Validate reports ErrInvalidExtent for an invalid topic or partition, an
// end before its start, or an end past MaxBatchEnd.
func (e Extent) Validate() error {
	d := Destination{Sink: RawSink, Topic: e.Topic, Partition: e.Partition}
	if err := d.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidExtent, err)
	}
	switch {
	case e.End < e.Start:
		return fmt.Errorf("%w: %s/%d: end %d is before start %d", ErrInvalidExtent, quoteIfNeeded(e.Topic), e.Partition, e.End, e.Start)
	case e.End > MaxBatchEnd:
		return fmt.Errorf("%w: %s/%d: end %d is past %d, the largest batch id a tier keeps", ErrInvalidExtent, quoteIfNeeded(e.Topic), e.Partition, e.End, uint64(MaxBatchEnd))
	}
	return nil
}

// Range is the extent as a range; ok is false when it is empty.
func (e Extent) Range() (r Range, ok bool) {
	return Range{Start: e.Start, End: e.End}, e.End > e.Start
}

// ValidateExtents checks every extent and that no (topic, partition) is
// given twice (two different ends would leave the reader to pick one), and
// returns them sorted by topic and partition.
func ValidateExtents(es []Extent) ([]Extent, error) {
	out := slices.Clone(es)
	for i, e := range out {
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("extent %d: %w", i, err)
		}
	}
	slices.SortFunc(out, compareExtents)
	for i := 1; i < len(out); i++ {
		if out[i].Topic == out[i-1].Topic && out[i].Partition == out[i-1].Partition {
			return nil, fmt.Errorf("%w: %s/%d is given twice: give each partition one extent", ErrInvalidExtent, quoteIfNeeded(out[i].Topic), out[i].Partition)
		}
	}
	return out, nil
}

func compareExtents(a, b Extent) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return int(a.Partition) - int(b.Partition)
}

// MaxExtentsBytes bounds the JSON ParseExtents reads: 64 MiB, about a
// million extents.
const MaxExtentsBytes = 64 << 20

// ParseExtents reads a JSON array of extents ({"topic","partition","start",
// "end"}, start optional; no other field), validated by ValidateExtents.
// Anything else (trailing data, an unknown field, a negative or fractional
// number, a body past MaxExtentsBytes) is an error wrapping
// ErrInvalidExtent that says where, and no extent is returned.
func ParseExtents(r io.Reader) ([]Extent, error) {
	return ParseExtentsStarting(r, nil)
}

// wireExtent is an extent as sent.
type wireExtent struct {
	Topic     *string `json:"topic"`
	Partition *int32  `json:"partition"`
	Start     *uint64 `json:"start"`
	End       *uint64 `json:"end"`
}

const extentShape = `{"topic","partition","start","end"} (start optional)`

var extentFields = wirejson.Fields{
	Names:   []string{"topic", "partition", "start", "end"},
	Numbers: []bool{false, true, true, true},
	What:    "topic, partition, start and end",
}

// jsonProblem says what encoding/json refused without its Go types: a
// field of the wrong type or range is named with the JSON value given.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return fmt.Sprintf("field %q: %s is not %s", te.Field, te.Value, wantOf(te.Field))
	case errors.As(err, &te):
		return "got a JSON " + te.Value
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// wantOf is what field must hold.
func wantOf(field string) string {
	switch field {
	case "partition":
		return "an integer from 0 to 2147483647"
	case "start", "end":
		return fmt.Sprintf("a batch id (an integer from 0 to %d)", uint64(MaxBatchEnd))
	}
	return "a string"
}

// ParseExtentsStarting is ParseExtents where an extent without "start"
// takes its topic's declared start, starts[topic] (absent: 0): the first
// batch id of a stream whose ids do not begin at 0. An explicit "start",
// 0 included, is kept.
func ParseExtentsStarting(r io.Reader, starts map[string]uint64) ([]Extent, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxExtentsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading source extents: %w", err)
	}
	if len(data) > MaxExtentsBytes {
		return nil, fmt.Errorf("%w: more than %d bytes of JSON", ErrInvalidExtent, MaxExtentsBytes)
	}
	// Each object is read on its own so that the record API's strict
	// checks (wirejson.Check: a field given twice, a field in another case,
	// a string that is not UTF-8) apply to it, and errors name no Go type.
	dec := json.NewDecoder(bytes.NewReader(data))
	var objs []json.RawMessage
	if err := dec.Decode(&objs); err != nil {
		return nil, fmt.Errorf("%w: want a JSON array of %s: %s", ErrInvalidExtent, extentShape, jsonProblem(err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON array", ErrInvalidExtent)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: data after the JSON array", ErrInvalidExtent)
	}
	if objs == nil {
		return nil, fmt.Errorf("%w: want a JSON array, not null", ErrInvalidExtent)
	}
	raw := make([]wireExtent, len(objs))
	for i, obj := range objs {
		if len(obj) == 0 || obj[0] != '{' {
			return nil, fmt.Errorf("%w: extent %d is not an object %s", ErrInvalidExtent, i, extentShape)
		}
		if e := wirejson.Check(obj, extentFields); e != nil {
			return nil, fmt.Errorf("%w: extent %d: %w", ErrInvalidExtent, i, e)
		}
		d := json.NewDecoder(bytes.NewReader(obj))
		d.DisallowUnknownFields()
		if err := d.Decode(&raw[i]); err != nil {
			return nil, fmt.Errorf("%w: extent %d: %s", ErrInvalidExtent, i, jsonProblem(err))
		}
	}
	out := make([]Extent, 0, len(raw))
	for i, x := range raw {
		switch {
		case x.Topic == nil:
			return nil, fmt.Errorf("%w: extent %d has no \"topic\"", ErrInvalidExtent, i)
		case x.Partition == nil:
			return nil, fmt.Errorf("%w: extent %d has no \"partition\"", ErrInvalidExtent, i)
		case x.End == nil:
			return nil, fmt.Errorf("%w: extent %d has no \"end\" (the first batch id the source has not acked)", ErrInvalidExtent, i)
		}
		e := Extent{Topic: *x.Topic, Partition: *x.Partition, Start: starts[*x.Topic], End: *x.End}
		if x.Start != nil {
			e.Start = *x.Start
		}
		out = append(out, e)
	}
	return ValidateExtents(out)
}
