package recovery

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// mapTier is a durable tier in memory, indexed by partition as a table's
// reads by partition are, that records every filter it is read by. Its
// coverage is set directly (put); Append is not needed by the readers'
// tests. With lister set it is a SinkLister.
type mapTier struct {
	mu     sync.Mutex
	parts  map[TopicPartition]map[string]*coverage.RangeSet
	topics map[string][]TopicPartition
	sinks  map[string]map[string]bool // topic -> sinks
	reads  []durable.Filter
	lists  [][]string
}

func newMapTier(all map[coverage.Destination]*coverage.RangeSet) *mapTier {
	m := &mapTier{parts: map[TopicPartition]map[string]*coverage.RangeSet{}, topics: map[string][]TopicPartition{}, sinks: map[string]map[string]bool{}}
	for d, set := range all {
		m.put(d, set)
	}
	return m
}

func (m *mapTier) put(d coverage.Destination, set *coverage.RangeSet) {
	tp := d.TopicPartition()
	if m.parts[tp] == nil {
		m.parts[tp] = map[string]*coverage.RangeSet{}
		m.topics[d.Topic] = append(m.topics[d.Topic], tp)
	}
	m.parts[tp][d.Sink] = set
	if m.sinks[d.Topic] == nil {
		m.sinks[d.Topic] = map[string]bool{}
	}
	m.sinks[d.Topic][d.Sink] = true
}

func (m *mapTier) Name() string { return "map" }

func (m *mapTier) Append(context.Context, durable.Checkpoint) error {
	return errors.New("mapTier: append is not supported")
}

func (m *mapTier) Landed(context.Context, string, string) (bool, error) { return false, nil }

// Coverage returns the tier's own sets (readers never modify them).
func (m *mapTier) Coverage(_ context.Context, f durable.Filter) (map[coverage.Destination]*coverage.RangeSet, error) {
	m.mu.Lock()
	m.reads = append(m.reads, f)
	m.mu.Unlock()
	var tps []TopicPartition
	switch {
	case len(f.Partitions) > 0:
		tps = f.Partitions
	case f.Topic != "":
		tps = m.topics[f.Topic]
	default:
		tps = slices.Collect(maps.Keys(m.parts))
	}
	match := f.Matcher()
	out := map[coverage.Destination]*coverage.RangeSet{}
	for _, tp := range tps {
		for sink, set := range m.parts[tp] {
			if d := (coverage.Destination{Sink: sink, Topic: tp.Topic, Partition: tp.Partition}); match(d) {
				out[d] = set
			}
		}
	}
	return out, nil
}

// listingTier is mapTier with SinkLister: a topic's sinks are known
// without a read of its coverage.
type listingTier struct{ *mapTier }

func (l listingTier) TopicSinks(_ context.Context, topics []string) (map[string][]string, error) {
	l.mu.Lock()
	l.lists = append(l.lists, topics)
	l.mu.Unlock()
	if topics == nil {
		topics = slices.Collect(maps.Keys(l.topics))
	}
	out := map[string][]string{}
	for _, topic := range topics {
		if sinks := l.sinks[topic]; len(sinks) > 0 {
			out[topic] = slices.Sorted(maps.Keys(sinks))
		}
	}
	return out, nil
}
