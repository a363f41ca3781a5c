package benthos

import (
	"fmt"
	"maps"
	"slices"

	"github.com/redpanda-data/benthos/v4/public/service"

	"github.com/covmirror/covmirror/coverage"
)

// topicSinksField is a topic_sinks field: a map of topic to the list of
// sinks the pipeline writes it to (coverage.SinksFor), as
//
//	topic_sinks:
//	  orders: [pg, es, lake]
//	  audit: []   # none named for audit
func topicSinksField(what string) *service.ConfigField {
	return service.NewAnyMapField("topic_sinks").Default(map[string]any{}).
		Description("The sinks each topic is written to, in place of `sinks` for that topic, a list per topic (`[]`: none named for it): " + what + " The sinks with coverage rows of a topic are measured there whatever is named.")
}

// parseTopicSinks reads a topic_sinks field, each name checked
// (coverage.ValidateNamedSinks); nil for none.
func parseTopicSinks(conf *service.ParsedConfig) (map[string][]string, error) {
	m, err := conf.FieldAnyMap("topic_sinks")
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		return nil, nil
	}
	out := make(map[string][]string, len(m))
	for _, topic := range slices.Sorted(maps.Keys(m)) {
		sinks, err := m[topic].FieldStringList()
		if err != nil {
			return nil, fmt.Errorf("covmirror: topic_sinks.%s: %w: give a list of sink names", coverage.QuoteName(topic), err)
		}
		out[topic] = sinks
	}
	if err := coverage.ValidateNamedSinks(nil, out); err != nil {
		return nil, fmt.Errorf("covmirror: topic_sinks: %w", err)
	}
	return out, nil
}
