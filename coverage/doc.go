// Package coverage is the gap-aware model of sink write coverage: which
// batches of which (sink, topic, partition) have been durably written.
//
// # The invariant
//
// Coverage and source positions may lag, never lead. Lagging (coverage says a
// batch is unwritten when it was) costs a redundant replay that record-id
// dedup absorbs. Leading (coverage claims a write that did not happen) is
// silent, permanent loss: recovery never replays the batch, and the source was
// acknowledged long ago. Everything in this package follows from that
// asymmetry:
//
//   - Coverage is recorded only after the sink's durable acknowledgement.
//     [WriteThenRecord] makes that ordering the easy path.
//   - Coverage is a set of covered ranges ([RangeSet]), never a high-water
//     mark, so a hole in the middle is representable and recoverable.
//   - Two writers meet by union, never by last-write-wins. Adding a range
//     merges it with the ranges it overlaps or touches; nothing else ever joins
//     two ranges, so a hole closes only when the hole itself is recorded.
//   - A stored source position is trusted only as far as raw's coverage
//     reaches without a gap ([ResumePosition]).
//
// # Names
//
// The design text names its types in Rust; this package maps them to Go:
//
//	CoverageStore    -> Store
//	CoveredRange     -> Range
//	CoverageError    -> Error
//	InMemoryCoverage -> InMemory
//
// # Backends
//
// [Store] is implemented here by [InMemory], by the pod-local Pebble tier in
// package local, and by package mirror's Mirror, which records into the
// local tier and checkpoints into any durable tier (package durable: the
// Iceberg coverage table, the sink objects, the PostgreSQL rows). Every
// Store backend runs the same conformance suite, package coveragetest; every
// durable tier runs durable/durabletest.
//
// Building with the "invariants" tag re-checks a RangeSet's normalization
// (sorted, non-overlapping, non-adjacent, valid ranges, batch count) after
// every mutation; make test turns it on.
package coverage
