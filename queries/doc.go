// Package queries holds canned SQL for inspecting coverage (coverage, gaps,
// summary, lag, files) and runs it on DuckDB over the coverage table's
// current snapshot, without DuckDB's iceberg extension.
//
// Each query is a SQL file over a relation named coverage with the table's
// columns (files also reads coverage_files and coverage_snapshots; gaps,
// summary and lag read acked_extents, the source's acked extents, which
// Params.Extents fills for each run, and named_sinks, the sinks named for
// every topic (topic NULL) or for one topic, which Params.Sinks and
// Params.TopicSinks fill), so the same text runs on
// any engine once those relations are bound: see docs/queries.md. The CTEs the
// queries share are written once, under sql/parts, and expanded by Text.
// Parameters ($sink, $topic, $partition, $reference, $small_file_bytes)
// are bound by the engine, never pasted into the text. The gap rule the
// gaps and summary queries compute is the one internal/gapspec/testdata/gaps
// spells out for the planner and the PostgreSQL forms too.
//
// Binding: when the warehouse is a local path, the snapshot's data files,
// resolved with iceberg-go, are handed to read_parquet; otherwise (an object
// store, which DuckDB's httpfs cannot reach offline) iceberg-go scans the
// table and the rows are appended into a DuckDB table with DuckDB's
// Appender. The Appender rather than a registered Arrow stream: duckdb-go's
// Arrow interface needs the duckdb_arrow build tag in every build of the
// module, and a registered stream can be read once, while one table serves
// any number of queries. Neither binding applies delete files, so a
// snapshot that has them is refused (iceberg.ErrDeleteFiles).
//
// Each DB is an in-memory database of its own, attached to one DuckDB
// instance the process shares: starting an instance cost more than binding
// a snapshot of 100,000 ranges. What a DB (or a query text run on it)
// creates is in its own database, which Close detaches, and each query
// starts in it, whatever database a text before it switched to. The instance
// is not a boundary against the text itself: a text that names another
// database, ATTACHes one or sets a GLOBAL setting reaches every DB in the
// process, so RunSQL's text must be trusted (the canned queries are).
//
// Another durable tier (the sink objects) is bound by OpenTier: its merged
// coverage, one row per range, appended the same way; it has no data files
// or snapshots, so the files query finds none.
//
// The invariant it owns: rows are a log of possibly overlapping and
// duplicated ranges, and every query merges them before computing gaps, so
// a query never reports a batch covered that no row covers, nor a gap that
// some row covers. Gaps are measured against the reference's coverage, so a
// hole in the reference would hide every sink's gap behind it: the gaps and
// summary queries report the reference's own holes as gaps of the
// reference, as recovery.Plan does: over the hull of every batch any
// destination of the partition covers, since a sink is written only once
// raw is durable, and of the partition's acked extent where one is given,
// since the source is acked only once raw is durable; raw held every batch
// between, so an extent apart from the rows makes the stretch between a
// hole too (a partition only sinks have rows of, or only an extent, is one
// whole hole, unless the reference has no rows in a table that has some: a
// misspelt reference is not turned into holes everywhere). An extent only
// widens where holes are looked for, never hides one; sinks stay measured
// against the reference's rows. Lag lists the reference by its holes past
// its last covered batch. Filters never shrink the set of sinks measured: a sink of the
// topic that never wrote the selected partition lacks all of it. Batch
// totals are DECIMAL(38,0): sums of ranges near 2^63 do not overflow.
package queries
