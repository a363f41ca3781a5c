// Package gapmetrics exports the coverage table's committed gaps as
// Prometheus metrics: per sink, how many gaps, how many batches they miss
// and how old the oldest is, refreshed on an interval (Metrics.Run). A
// label kind says what closes them: replay (a replay from raw), or a gap
// state (package gapstate) holding them out of the plan: refused,
// unrecoverable, waived. The reference's own holes are kind
// verify-reference.
//
// # The invariant it owns
//
// A gap is counted exactly as the recovery planner would plan it
// (recovery.PlanCoverage, whose ReferenceHoles include the reference's own
// holes over the source's acked extents), so an alert and the plan never
// disagree about what is missing; the states are read from the tier the
// coverage is read from, and a held gap is still counted as missing, only
// under its own kind: a state is never coverage. Counts saturate instead of wrapping, a
// gap's age counts from the earliest evidence of it in the table, and a
// failed refresh keeps the last values and is itself exported, so a lag
// stays findable when the table cannot be read.
package gapmetrics
