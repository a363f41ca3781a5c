// Package benthos adds covmirror to a Benthos stream
// (github.com/redpanda-data/benthos/v4): a `covmirror` output that wraps
// one child output per sink and records coverage for what the child
// acknowledged, and a `covmirror_plan` input that emits the recovery
// plan's tasks for a replay stream. Register adds both to a Benthos
// environment; cmd/covmirror-benthos is Benthos' own components plus
// these two.
//
// # The invariant it owns
//
// Coverage may lag, never lead. The output records a message's batch only
// after its child output's WriteBatch returned, and only for the messages
// the child acknowledged: a *service.BatchError names the messages that
// failed, which are never recorded (nor a message the error does not
// mention); any other error records nothing of the batch. A message whose
// topic, partition or batch id does not parse is recorded as nothing.
//
// What a failure does depends on the sink:
//
//   - raw (reference: true) is the source's acknowledgement: a message is
//     acknowledged upstream only once raw acknowledged it and its coverage
//     is recorded. A failed write, a failed record or a message whose ids
//     do not parse fails that message, so the input (or the broker)
//     delivers it again; dedup absorbs the second write.
//   - any other sink never holds the source back: a failed write (or
//     record), or one that takes longer than the output's timeout, is
//     logged, counted and acknowledged, and the batches it lacks are a gap
//     that recovery plans from raw.
//
// A failure of a sink other than raw that the output's permanent field
// names (a status code, an error pattern, a count of failures) is
// recorded as refused, with the error as the reason: a gap state, never
// coverage, which only moves the batch out of the replay plan. When a
// plain error of several messages is permanent, each message is written
// alone again first, so that only what the sink refuses alone is refused.
//
// A replay learns that raw lost batches from its own stream: each
// covmirror_plan message (a piece of a task, sized to the sink's timeout)
// carries a token, the outputs of the process report the batches of a
// piece that reached them, and once the piece is acknowledged the input
// records the others as unrecoverable. A message that still carries an
// error (a failed read) is written nowhere and leaves its piece unjudged,
// so a replay's processors must drop only what raw does not hold.
//
// Coverage goes to a pod started in this process from the settings
// `covmirror serve` takes (state, durable tier, interval, ...): one per
// process, shared by every covmirror output (an output with other
// settings is refused), started by the first to connect and shut down,
// its final checkpoint carrying every record, when the last one closes.
// Or coverage goes to a running pod's record API (the sidecar field,
// through sidecar/client: all or nothing, retried safely; an error means
// maybe recorded, taken as not). The covmirror_plan input reads committed
// coverage only: the pod settings' durable tier, or a running pod's
// POST /v1/plan.
//
// A message is one batch. Its child output's processors must not drop
// messages: a dropped message is acknowledged, and would be recorded. A
// child that acknowledges what its sink does not hold is refused when the
// output is built: a fallback (its dead-letter output's ack), drop_on, a
// switch that drops a message no case matches (neither strict_mode nor a
// case without a check), nested in a broker or retry too.
package benthos
