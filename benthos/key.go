package benthos

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/coverage"
)

// batchKey is one message's place in coverage: its destination and batch.
type batchKey struct {
	d  coverage.Destination
	id uint64
}

// sinkLabel is the key's sink as a metric label: empty when it did not
// resolve or is no valid sink name. An interpolated sink is whatever a
// message carries: a label per invalid name (a line break, 100 KiB) would
// grow the metrics without bound.
func (k batchKey) sinkLabel() string {
	if (coverage.Destination{Sink: k.d.Sink, Topic: "t"}).Validate() != nil {
		return ""
	}
	return k.d.Sink
}

// key resolves m's sink, topic, partition and batch id; a value that does
// not resolve or parse is an error naming the field and the value.
func (o *output) key(m *service.Message) (batchKey, error) {
	var k batchKey
	var vals [4]string
	for i, f := range []struct {
		name string
		s    *service.InterpolatedString
	}{{"sink", o.sink}, {"topic", o.topic}, {"partition", o.partition}, {"batch_id", o.batchID}} {
		v, err := f.s.TryString(m)
		if err != nil {
			return k, fmt.Errorf("the message's %s does not resolve: %w", f.name, err)
		}
		vals[i] = v
	}
	k.d.Sink, k.d.Topic = vals[0], vals[1]
	p, err := parseUint("partition", vals[2], 1<<31-1)
	if err != nil {
		return k, err
	}
	k.d.Partition = int32(p)
	if k.id, err = parseUint("batch_id", vals[3], coverage.MaxBatchEnd-1); err != nil {
		return k, err
	}
	if err := coverage.ValidateNew(k.d, coverage.Range{Start: k.id, End: k.id + 1}); err != nil {
		return k, fmt.Errorf("the message's sink %q, topic %q: %w", k.d.Sink, k.d.Topic, err)
	}
	return k, nil
}

// parseUint reads a decimal number from 0 to max, digits only.
func parseUint(name, v string, max uint64) (uint64, error) {
	t := strings.TrimSpace(v)
	n, err := strconv.ParseUint(t, 10, 64)
	if err != nil || t == "" || t[0] < '0' || t[0] > '9' || n > max {
		return 0, fmt.Errorf("the message's %s %q is not a number from 0 to %d", name, truncate(v), max)
	}
	return n, nil
}

// truncate keeps an error message short whatever a message carried.
func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// coalesce merges entries of one destination and adjacent batches into
// ranges, so that a batch of consecutive offsets is one record.
func coalesce(entries []coverage.Entry) []coverage.Entry {
	slices.SortFunc(entries, func(a, b coverage.Entry) int {
		return cmp.Or(a.Destination.Compare(b.Destination), cmp.Compare(a.Range.Start, b.Range.Start))
	})
	out := entries[:0]
	for _, e := range entries {
		if n := len(out); n > 0 && out[n-1].Destination == e.Destination && e.Range.Start <= out[n-1].Range.End {
			out[n-1].Range.End = max(out[n-1].Range.End, e.Range.End)
			continue
		}
		out = append(out, e)
	}
	return out
}
