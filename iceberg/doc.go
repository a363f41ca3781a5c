// Package iceberg is the durable tier: the coverage Iceberg table in the
// same catalog as raw, opened from iceberg-go catalog properties (the SQL
// catalog on SQLite is the embedded default; the SQL catalog on PostgreSQL
// and the REST catalog work from properties alone).
//
// # The invariant it owns
//
// The table is a log of covered ranges, merged by union on read: a row is
// appended only for a range the local tier recorded after the sink's
// acknowledgement, no commit removes coverage, and a duplicated row is
// harmless. A nil from Append means every range of the commit is in the
// table: the snapshot carrying the rows is committed, and before the commit
// the data files were verified (commit.go: writeVerified), since
// iceberg-go's writer can return without an error and without one
// partition's file. Each partition's files must hold exactly the rows
// built for it, and each file must be in the table's FileIO with its
// recorded size; otherwise the write fails with ErrUnverifiedWrite and
// nothing is committed. Every path that writes data files (Append,
// Rewrite, both TableSink paths, positions) goes through that one writer.
// The local tier marks a checkpoint only after a nil; any error leaves the
// ranges pending for the next checkpoint. MergeManifests writes no data
// file and must remove none: the merged listing is checked to hold exactly
// the files it started from before it is committed, and the committed one
// exactly its parent's after.
//
// A commit's name is an idempotency key bound to what it carries: the
// snapshot summary holds the writer, the name and a digest of the
// destinations, ranges and row count. A lookup after an unknown outcome
// matches writer and name; the same writer and name with another payload
// is ErrNameReused, never a silent skip.
//
// # Schema
//
//	sink           string       required  the sink the range was written to
//	topic          string       required
//	partition      int          required
//	range_start    long         required  first batch id, inclusive
//	range_end      long         required  batch id after the last, exclusive
//	writer         string       required  the pod or job that checkpointed the row
//	checkpoint_id  string       required  the checkpoint's unique name
//	recorded_at    timestamptz  required  when the row's checkpoint was committed;
//	                                      a compacted row keeps the latest of the
//	                                      rows it merged
//	sink_key       string       required  PathKey(sink) (partition: identity)
//
// The partition column is a path-safe key, never the sink name: iceberg-go
// puts identity partition values into data file paths and a name like ".."
// or "../x" would escape the table's location. PathKey passes
// [A-Za-z0-9_-] and writes every other byte as ~XX; a key over 96 bytes is
// a prefix, "~~" and a hash. Readers filter on the key and the name; SinkOf
// recovers a file's sink. The positions table has source_key likewise.
// Tables are of kind coverage/2 and positions/2 (table property
// covmirror.schema); a table of the first shape, partitioned by the raw
// name, is refused with ErrIncompatibleTable.
//
// # Gap states
//
// The gap_states table (StatesTableName, kind gap_states/1, unpartitioned)
// beside the coverage table holds the tier's gapstate.Events, one row
// each: event_id, sink, topic, partition, range_start, range_end, state,
// reason, decided_by, decided_at (to the microsecond), all required. It is
// a set keyed by event_id: AppendStates is one append commit (retried as
// coverage appends are), and a commit that landed twice is harmless, since
// States keeps one event per ID. Open creates the table when missing, the
// migration of a deployment made before it; the coverage table is never
// altered for it, so no reader of the coverage table, of any version, can
// take a state for coverage. The coverage table's rewrites, expiry and
// orphan sweep never touch it (the sweep refuses a location another table
// of the namespace lies within).
//
// Snapshot summaries carry covmirror.writer, covmirror.checkpoint,
// covmirror.payload and covmirror.version (the writer's covmirror
// version). The
// table is created with manifest merging on, so commit latency stays flat as
// checkpoints accumulate. An existing table whose schema lacks or retypes one
// of these columns is refused with ErrIncompatibleTable and never altered.
//
// Concurrent owners appending to the table always combine: the data files
// are written once and the commit is retried on a freshly loaded table
// (after a full-jitter pause on a conflict, so that writers that lost
// together do not retry together) until it lands or Options.CommitTimeout
// passes; a commit that failed without proving it did not land is first
// looked for by its writer and name. Table.CommitConflicts counts the lost
// attempts (durable.ConflictCounter).
//
// TableSink extends the invariant to a sink that is itself an Iceberg table
// in a catalog with multi-table transactions: its rows and their coverage
// rows are committed together, so coverage can never lead the sink, not
// even by the window between a sink's ack and the record.
package iceberg
