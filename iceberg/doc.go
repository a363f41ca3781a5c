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
// harmless. Append returns nil only once the snapshot carrying the rows is
// in the table, so the local tier marks a checkpoint only after that; any
// error leaves the ranges pending for the next checkpoint.
//
// # Schema
//
//	sink           string       required  the sink the range was written to (partition: identity)
//	topic          string       required
//	partition      int          required
//	range_start    long         required  first batch id, inclusive
//	range_end      long         required  batch id after the last, exclusive
//	writer         string       required  the pod or job that checkpointed the row
//	checkpoint_id  string       required  the checkpoint's unique name
//	recorded_at    timestamptz  required  when the row was written
//
// Snapshot summaries carry covmirror.writer and covmirror.checkpoint. The
// table is created with manifest merging on, so commit latency stays flat as
// checkpoints accumulate. An existing table whose schema lacks or retypes one
// of these columns is refused with ErrIncompatibleTable and never altered.
//
// Concurrent owners appending to the table always combine: the data files
// are written once and the commit is retried on a freshly loaded table until
// it lands or Options.CommitTimeout passes; a commit that failed without
// proving it did not land is first looked for by its checkpoint name.
//
// TableSink extends the invariant to a sink that is itself an Iceberg table
// in a catalog with multi-table transactions: its rows and their coverage
// rows are committed together, so coverage can never lead the sink, not
// even by the window between a sink's ack and the record.
package iceberg
