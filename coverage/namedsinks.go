package coverage

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// The named sinks: the sinks a pipeline is known to write a topic to,
// measured against the reference in that topic besides the sinks that have
// rows of it (those are always measured, so that naming sinks never hides
// a lag). A sink without a row of a topic it writes (the topic lost on
// every destination, or never recorded there yet) is found only by being
// named. One rule, used by every surface that measures gaps (the planner,
// the queries on DuckDB and PostgreSQL, the gap metrics, the coverage map,
// the record API, the command line): the named sinks of topic t are
// perTopic[t] when t is a key of perTopic (an empty list: none named for
// t), else def, the sinks every topic is written to.

// SinksFor returns the named sinks of topic: perTopic[topic] when topic is
// a key (an empty list names none), else def. The slice returned is one of
// the two given, not a copy.
func SinksFor(topic string, def []string, perTopic map[string][]string) []string {
	if sinks, ok := perTopic[topic]; ok {
		return sinks
	}
	return def
}

// ValidateNamedSinks checks the names of def and perTopic by
// Destination.Validate, the rule a stored destination's names meet (a sink
// no record could carry is refused, not planned): exact bytes, never
// trimmed. An error wraps ErrInvalidDestination and says which list.
func ValidateNamedSinks(def []string, perTopic map[string][]string) error {
	for _, sink := range def {
		if err := validSinkName(sink); err != nil {
			return fmt.Errorf("named sink %q: %w", sink, err)
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(perTopic)) {
		if err := (Destination{Sink: "s", Topic: topic}).Validate(); err != nil {
			return fmt.Errorf("topic %q of the per-topic sinks: %w", topic, err)
		}
		for _, sink := range perTopic[topic] {
			if err := validSinkName(sink); err != nil {
				return fmt.Errorf("named sink %q of topic %q: %w", sink, topic, err)
			}
		}
	}
	return nil
}

func validSinkName(sink string) error { return (Destination{Sink: sink, Topic: "t"}).Validate() }

// ParseSinks reads sink names separated by commas, each valid
// (ValidateNamedSinks' rule), exact bytes: " lake" is its own sink.
func ParseSinks(v string) ([]string, error) {
	var sinks []string
	for _, name := range strings.Split(v, ",") {
		if err := validSinkName(name); err != nil {
			return nil, fmt.Errorf("%s: %w: give sink names separated by commas", quoteValue(v), err)
		}
		sinks = append(sinks, name)
	}
	return sinks, nil
}

// ErrTopicSinksSyntax is a per-topic sinks entry that is not
// TOPIC=SINK,SINK.
var ErrTopicSinksSyntax = errors.New("not TOPIC=SINK,SINK")

// ParseTopicSinks reads one per-topic entry, TOPIC=SINK,SINK: the topic is
// what comes before the first =, so a topic holding = cannot be named this
// way; TOPIC= names no sink for the topic (only the sinks with rows of it
// are measured there). Names are exact bytes, checked as
// ValidateNamedSinks checks them.
func ParseTopicSinks(v string) (topic string, sinks []string, err error) {
	topic, list, ok := strings.Cut(v, "=")
	if !ok {
		return "", nil, fmt.Errorf("%s: %w (TOPIC= for none)", quoteValue(v), ErrTopicSinksSyntax)
	}
	if err := (Destination{Sink: "s", Topic: topic}).Validate(); err != nil {
		return "", nil, fmt.Errorf("%s: %w: give TOPIC=SINK,SINK", quoteValue(v), err)
	}
	sinks = []string{}
	if list != "" {
		if sinks, err = ParseSinks(list); err != nil {
			return "", nil, fmt.Errorf("topic %q: %w", topic, err)
		}
	}
	return topic, sinks, nil
}

// AddTopicSinks parses v (ParseTopicSinks) into m, refusing a topic m
// already holds: one entry per topic, so that two lists for a topic never
// silently replace or join each other.
func AddTopicSinks(m map[string][]string, v string) error {
	topic, sinks, err := ParseTopicSinks(v)
	if err != nil {
		return err
	}
	if _, dup := m[topic]; dup {
		return fmt.Errorf("topic %q is given sinks twice: give each topic once, TOPIC=SINK,SINK", topic)
	}
	m[topic] = sinks
	return nil
}

// maxQuotedValue bounds how much of a value an error quotes: a list may
// come from a request (the record API's topic-sinks=), and its error must
// not echo megabytes back. The name at fault is quoted by its own error,
// and names are at most MaxNameLen bytes.
const maxQuotedValue = 100

// quoteValue quotes v (%q), its first maxQuotedValue bytes (cut at a
// rune's start) and "..." when longer.
func quoteValue(v string) string {
	if len(v) <= maxQuotedValue {
		return fmt.Sprintf("%q", v)
	}
	n := maxQuotedValue
	for n > maxQuotedValue-utf8.UTFMax && !utf8.RuneStart(v[n]) {
		n--
	}
	return fmt.Sprintf("%q...", v[:n])
}
