// Package queries will hold canned DuckDB SQL for gap inspection (coverage,
// gaps, summary, lag, files) over a relation named coverage, bound to the
// table's data files without DuckDB's iceberg extension.
//
// The invariant it owns: rows are a log of possibly overlapping ranges, and
// every query merges them before computing gaps, so a query never reports a
// batch covered that no row covers.
package queries
