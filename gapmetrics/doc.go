// Package gapmetrics exports the coverage table's committed gaps as
// Prometheus metrics: per sink, how many gaps, how many batches they miss
// and how old the oldest is, refreshed on an interval (Metrics.Run).
//
// # The invariant it owns
//
// A gap is counted exactly as the recovery planner would plan it
// (recovery.PlanCoverage, whose ReferenceHoles include the reference's own
// holes over the source's acked extents), so an alert and the plan never
// disagree about what is missing. Counts saturate instead of wrapping, a
// gap's age counts from the earliest evidence of it in the table, and a
// failed refresh keeps the last values and is itself exported, so a lag
// stays findable when the table cannot be read.
package gapmetrics
