package coverage

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// RawSink is the conventional name of the pipeline's raw store as a sink. Its
// coverage is the reference other sinks' gaps are measured against and, for
// sources without a broker-held position, the bound on the resume position.
const RawSink = "raw"

// MaxNameLen bounds sink and topic names, in bytes.
const MaxNameLen = 1024

// Destination is what coverage is kept for: one partition of one topic as
// written to one sink.
type Destination struct {
	Sink      string `json:"sink"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

// Validate reports ErrInvalidDestination for an empty, overlong or non-UTF-8
// sink or topic name, a sink name with a control character, a topic name
// with a NUL byte, or a negative partition. Sink names are configured
// identifiers, and the durable tiers use them in file paths and object keys; topic names
// may hold any other UTF-8.
func (d Destination) Validate() error {
	if err := validateName("sink", d.Sink); err != nil {
		return err
	}
	if i := strings.IndexFunc(d.Sink, unicode.IsControl); i >= 0 {
		return fmt.Errorf("%w: sink name %q has a control character at byte %d", ErrInvalidDestination, d.Sink, i)
	}
	if err := validateName("topic", d.Topic); err != nil {
		return err
	}
	if i := strings.IndexByte(d.Topic, 0); i >= 0 {
		// No broker allows one, and a tier keeping names as SQL text
		// cannot hold one: a record the durable tier refuses would hold
		// every later checkpoint back.
		return fmt.Errorf("%w: topic name %q has a NUL byte at byte %d", ErrInvalidDestination, d.Topic, i)
	}
	if d.Partition < 0 {
		return fmt.Errorf("%w: partition %d is negative", ErrInvalidDestination, d.Partition)
	}
	return nil
}

func validateName(what, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: %s name is empty", ErrInvalidDestination, what)
	case len(name) > MaxNameLen:
		return fmt.Errorf("%w: %s name is %d bytes, longer than %d", ErrInvalidDestination, what, len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return fmt.Errorf("%w: %s name %q is not valid UTF-8", ErrInvalidDestination, what, name)
	}
	return nil
}

// String formats d as sink/topic/partition, quoting (strconv.Quote) a
// name that would make that form ambiguous or that holds a character a
// terminal or a log reader acts on rather than shows.
func (d Destination) String() string {
	return quoteIfNeeded(d.Sink) + "/" + quoteIfNeeded(d.Topic) + "/" + strconv.FormatInt(int64(d.Partition), 10)
}

func quoteIfNeeded(s string) string {
	for _, c := range s {
		// Not printable: a control (C0 or C1, whose CSI acts on a
		// terminal), a separator or a format character (a bidi override)
		// would print as itself, or as nothing, but not as its bytes.
		if c == '/' || c == '"' || c == ' ' || !unicode.IsPrint(c) {
			return strconv.Quote(s)
		}
	}
	if s == "" {
		return `""`
	}
	return s
}

// Compare orders destinations by sink, topic, then partition.
func (d Destination) Compare(o Destination) int {
	if c := cmp.Compare(d.Sink, o.Sink); c != 0 {
		return c
	}
	if c := cmp.Compare(d.Topic, o.Topic); c != 0 {
		return c
	}
	return cmp.Compare(d.Partition, o.Partition)
}

// WithSink returns d with its sink replaced: the same topic and partition as
// written to another sink (raw, typically).
func (d Destination) WithSink(sink string) Destination {
	d.Sink = sink
	return d
}

// DestinationRanges are ranges of one destination, in ascending order: the
// unit in which coverage moves between the tiers.
type DestinationRanges struct {
	Destination Destination `json:"destination"`
	Ranges      []Range     `json:"ranges"`
}

// TopicPartition names one partition of a topic: the destinations of every
// sink that share it, which a reader selects together (a partition's plan
// needs the reference's coverage and every sink's).
type TopicPartition struct {
	Topic     string
	Partition int32
}

// Compare orders partitions by topic, then partition.
func (tp TopicPartition) Compare(o TopicPartition) int {
	return cmp.Or(cmp.Compare(tp.Topic, o.Topic), cmp.Compare(tp.Partition, o.Partition))
}

// TopicPartition is d's partition.
func (d Destination) TopicPartition() TopicPartition {
	return TopicPartition{Topic: d.Topic, Partition: d.Partition}
}
