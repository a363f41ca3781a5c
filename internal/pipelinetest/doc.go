// Package pipelinetest runs covmirror the way a user wires it into a real
// pipeline, end to end, under the integration build tag: NATS JetStream as
// the source (an embedded nats-server; explicit acks, so the broker holds
// each partition's position), raw and a sink as PostgreSQL tables, a sink
// on a Redis the test starts, and coverage recorded through a real
// `covmirror serve` process. serve, the workers and Redis are killed and
// restarted mid-stream; at the end the documented recovery loop runs (the
// broker's acked positions into `covmirror plan --acked-ends`, replay from
// raw, checkpoint, until the plan is empty). It is for tests only.
//
// The invariant it checks: coverage may lag, never lead. Committed
// coverage never claims a batch its sink does not hold, before recovery or
// after any round of it; and once recovery has converged, every batch the
// producer published is in raw and in every sink, and committed coverage
// is exactly what each sink holds. It also holds serve to its record API's
// promise: with serve --sync (odd seeds), a record answered 200 is in
// committed coverage once serve, killed after answering, has come back.
package pipelinetest
