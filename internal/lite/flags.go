package lite

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// PartitionFlag is an optional partition: a non-negative 32-bit integer,
// checked when parsed (a plain int flag would wrap 4294967297 to 1 and take
// -7 as "every partition").
type PartitionFlag struct{ P *int32 }

func (f *PartitionFlag) String() string {
	if f == nil || f.P == nil {
		return ""
	}
	return strconv.Itoa(int(*f.P))
}

func (f *PartitionFlag) Set(s string) error {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil || n < 0 {
		return fmt.Errorf("a partition is a non-negative 32-bit integer (0 to 2147483647), not %q", s)
	}
	p := int32(n)
	f.P = &p
	return nil
}

// AddStart reads one stream start, TOPIC=N.
func AddStart(starts map[string]string, kv string) error {
	topic, n, ok := strings.Cut(kv, "=")
	if !ok {
		return fmt.Errorf("stream start %q is not TOPIC=N", kv)
	}
	// The topic is its exact bytes: " orders" is another topic.
	n = strings.TrimSpace(n)
	if _, err := coverage.ParseStart(topic, n); err != nil {
		return err
	}
	if _, dup := starts[topic]; dup {
		return fmt.Errorf("stream start of %q is given twice: give each topic one", topic)
	}
	starts[topic] = n
	return nil
}

func AddSource(sources map[string]string, kv string) error {
	name, regime, ok := strings.Cut(kv, "=") // the name is its exact bytes
	if !ok || name == "" {
		return fmt.Errorf("source %q is not NAME=stored or NAME=broker-managed", kv)
	}
	if err := coverage.ValidName("source", name); err != nil {
		return err
	}
	if _, err := coverage.ParseRegime(regime); err != nil {
		return fmt.Errorf("source %q: %w", name, err)
	}
	if _, dup := sources[name]; dup {
		return fmt.Errorf("source %q is declared twice", name)
	}
	sources[name] = strings.TrimSpace(regime)
	return nil
}

// AddTopicSinks reads one topic's sinks, TOPIC=SINK,SINK
// (coverage.ParseTopicSinks), into m as TOPIC -> SINK,SINK, refusing a
// topic given twice: the Map setting topic-sinks.
func AddTopicSinks(m map[string]string, kv string) error {
	topic, _, err := coverage.ParseTopicSinks(kv)
	if err != nil {
		return err
	}
	if _, dup := m[topic]; dup {
		return fmt.Errorf("topic %q is given sinks twice: give each topic once, TOPIC=SINK,SINK", topic)
	}
	_, m[topic], _ = strings.Cut(kv, "=")
	return nil
}

// TopicSinks is the topic-sinks setting's value as
// recovery.PlanOptions.TopicSinks takes it (nil for none), each entry
// checked by AddTopicSinks already.
func TopicSinks(m map[string]string) (map[string][]string, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := map[string][]string{}
	for topic, list := range m {
		if err := coverage.AddTopicSinks(out, topic+"="+list); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ParseSinks reads sink names, comma-separated, each valid
// (recovery.PlanOptions.Sinks; coverage.ParseSinks).
func ParseSinks(v string) ([]string, error) { return coverage.ParseSinks(v) }
