package coverage

// TopicPartition is one partition of one topic, whatever the sink: the unit
// a pipeline owns, and hands over on a rebalance.
type TopicPartition struct {
	Topic     string
	Partition int32
}
