// Package replica copies a primary durable tier (the sink objects, the
// PostgreSQL rows) into the coverage table, so that any engine can query
// coverage whichever tier is primary. Replicate runs one copy;
// ReplicateEvery runs it on a schedule.
//
// # The invariant it owns
//
// The coverage table may lag the primary, never lead it: a sink's rows are
// replaced only by what the primary had committed when it was read, a sink
// the table already holds exactly is left alone, and a sink whose rows
// cannot be read is left as it is and reported (Result.Corrupt) while the
// others are copied. A copy that fails leaves the table as it was, lagging
// until the next run. Nothing here plans from the table; planners read the
// primary.
//
// The primary's gap states (package gapstate) are copied into the gap
// states table beside the coverage table, never into the coverage table:
// the events the table lacks, by ID, appended (ReplicateStates). Like every
// tier's states they merge by union; nothing is removed or replaced.
package replica
