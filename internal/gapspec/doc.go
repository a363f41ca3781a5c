// Package gapspec holds the one specification of covmirror's gap rule,
// testdata/gaps, and what its runners share: parsing a case's history into
// a neutral form (Case) and printing an engine's answer canonically
// (Result.String), so that the Go planner, the DuckDB queries and the
// PostgreSQL queries are checked against the very same expected text: the
// gaps, raw's holes, and the summary they add up to.
//
// The runners are TestGapSpec in packages recovery, queries and postgres;
// go test ./recovery -run GapSpec -rewrite regenerates the expected text,
// which the other two must then print too.
//
// The rule the file pins down, whatever engine computes it: a sink's gaps
// are the reference's (raw's) committed ranges the sink lacks, never more
// (a stretch raw itself lacks is no sink's gap yet); raw's holes are what
// raw lacks of its span, the hull of every destination's coverage of the
// partition and of the source's acked extent (a sink is written, and the
// source acked, only once raw is durable). A hole is never closed that was
// not recorded: an engine that prints fewer gaps than the spec fails.
//
// It is imported by tests only.
package gapspec
