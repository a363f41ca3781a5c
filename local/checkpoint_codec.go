package local

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// The open checkpoint is stored in one value: a JSON header, then per
// destination its key encoding, a range count and the ranges as varint
// deltas. A checkpoint of 100,000 ranges takes a few hundred kilobytes and
// no reflection.
type checkpointHeader struct {
	ID           uint64    `json:"id"`
	Store        string    `json:"store"`
	Run          string    `json:"run,omitempty"`
	BegunAt      time.Time `json:"begun_at"`
	Destinations int       `json:"destinations"`
}

func encodeCheckpoint(cp *Checkpoint) ([]byte, error) {
	header, err := json.Marshal(checkpointHeader{ID: cp.ID, Store: cp.Store, Run: cp.Run, BegunAt: cp.BegunAt, Destinations: len(cp.Ranges)})
	if err != nil {
		return nil, err
	}
	out := binary.AppendUvarint(nil, uint64(len(header)))
	out = append(out, header...)
	for _, dr := range cp.Ranges {
		prefix := destinationPrefix(nil, kindCovered, dr.Destination)
		out = binary.AppendUvarint(out, uint64(len(prefix)))
		out = append(out, prefix...)
		out = binary.AppendUvarint(out, uint64(len(dr.Ranges)))
		var prev uint64
		for _, r := range dr.Ranges {
			out = binary.AppendUvarint(out, r.Start-prev)
			out = binary.AppendUvarint(out, r.End-r.Start)
			prev = r.End
		}
	}
	return out, nil
}

var errTruncated = errors.New("truncated")

func decodeCheckpoint(b []byte) (*Checkpoint, error) {
	next := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, errTruncated
		}
		b = b[n:]
		return v, nil
	}
	take := func(n uint64) ([]byte, error) {
		if n > uint64(len(b)) {
			return nil, errTruncated
		}
		out := b[:n]
		b = b[n:]
		return out, nil
	}
	n, err := next()
	if err != nil {
		return nil, err
	}
	raw, err := take(n)
	if err != nil {
		return nil, err
	}
	var h checkpointHeader
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, err
	}
	cp := &Checkpoint{ID: h.ID, Store: h.Store, Run: h.Run, BegunAt: h.BegunAt}
	for range h.Destinations {
		n, err := next()
		if err != nil {
			return nil, err
		}
		prefix, err := take(n)
		if err != nil {
			return nil, err
		}
		d, rest, err := decodeDestinationKey(prefix)
		if err != nil || len(rest) != 0 {
			return nil, fmt.Errorf("destination %x: %v", prefix, err)
		}
		count, err := next()
		if err != nil {
			return nil, err
		}
		dr := coverage.DestinationRanges{Destination: d, Ranges: make([]coverage.Range, 0, min(count, 1<<20))}
		var prev uint64
		for range count {
			delta, err := next()
			if err != nil {
				return nil, err
			}
			length, err := next()
			if err != nil {
				return nil, err
			}
			r := coverage.Range{Start: prev + delta, End: prev + delta + length}
			if err := r.Validate(); err != nil {
				return nil, err
			}
			dr.Ranges = append(dr.Ranges, r)
			prev = r.End
		}
		cp.Ranges = append(cp.Ranges, dr)
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(b))
	}
	return cp, nil
}
