// Package iceberg will hold the durable tier: the coverage Iceberg table in
// the same catalog as raw, opened from iceberg-go catalog properties, written
// by checkpoint appends and read by a rebalancing owner and the recovery
// planner.
//
// The invariant it owns: the table is a log of covered ranges merged by
// union; a row is appended only for a range the local tier recorded after the
// sink's acknowledgement, and no commit removes coverage.
package iceberg
