// Package postgres is the durable tier as PostgreSQL tables (14 or later):
// per (sink, topic, partition) rows whose covered column is an
// int8multirange of batch ids, beside a table of checkpoint names, one of
// stored source positions, one of blobs (the deltas layout's) and one of
// gap states, all in one schema (Options.Schema).
//
// # The invariant it owns
//
// A destination's coverage is the union (range_agg) of its rows, and only
// ever grows: a checkpoint inserts one row per destination holding its new
// ranges, so it reads, locks and rewrites nothing another writer wrote,
// and costs what a plain INSERT of its rows costs. Fold merges a
// destination's rows into one in a single statement (DELETE ... RETURNING
// feeding the INSERT of their range_agg): the rows it deletes are exactly
// the rows it merges, so a row inserted meanwhile stays, and two folds of
// one destination take turns on its row locks. Every Options.FoldEvery-th
// Append of a Tier, after its checkpoint committed, folds the destinations
// that Tier appended to since its last fold and that hold more than
// Options.FoldRows rows, reading only their rows (through the index by
// destination): its cost follows what it wrote, never the table's size.
// Fold of the whole table is an operator's or a compaction job's.
// RecordInTx folds a destination past FoldRowsInTx rows within the
// caller's transaction. A fold that fails leaves more rows for reads to
// merge, never fewer ranges.
//
// A checkpoint's name is bound to its payload: Append inserts (writer,
// name, digest) in the same transaction as the ranges, so either both
// commit or neither does. An append of unknown outcome appended again
// finds its name with the same digest and writes nothing; the same name
// with another payload is durable.ErrNameReused and writes nothing. Names
// are kept for Options.NameRetention (15 minutes by default, as the
// Iceberg tier keeps its snapshots; by the appending Tier's clock): each
// Append deletes up to PruneBatch of its own writer's older names, and
// Fold of the whole table (or PruneNames) every writer's. Within the
// retention Landed is exact and a reused name is ErrNameReused; past it a
// name may be gone, Landed answers false, and appending it again writes
// its ranges again: a duplicate union, which changes no coverage (and a
// reused name then goes unnoticed). A negative retention keeps every
// name, a row of about a hundred bytes per checkpoint.
//
// RecordInTx is the exactly-once path for a relational sink: the coverage
// insert runs in the caller's transaction, so a sink's rows and their
// coverage commit or roll back together.
//
// QueryText's printed form of a query writes each parameter in once, as a
// literal no value can end (the placeholders are found in one pass over
// the query's own text, never in what was inserted), so a hostile sink or
// topic name is a filter, never SQL.
//
// # The deltas layout
//
// Options.Layout = LayoutDeltas writes a checkpoint as one row of the
// blobs table instead of a row per destination: Blobs is object.Blobs in
// PostgreSQL (a conditional write is one statement whose WHERE is its
// condition), and an object.Tier in its deltas layout writes over it, so
// the layout's invariant is the object tier's (see package object): a
// delta is created once, under a key naming its writer, name and payload
// digest, and never touched by another writer; FoldDeltas (the fleet
// role's fold job) merges deltas into bases under a conditional write, a
// base only grows, and a delta is deleted only after every base it
// touches was written with it. Blobs is also an object.BatchBlobs, so a
// fold reads, writes and deletes 128 keys a statement (a write's rows
// each under its own condition, committed together or not at all). A
// checkpoint costs one INSERT of the bytes it carries, whatever its
// destinations.
//
// Every read (Coverage, LastWrites, TopicSinks, Landed) returns the union
// of the coverage rows and of the deltas layout, whatever Options.Layout
// says, so processes of both layouts may write one schema at once and a
// deployment changes layout pod by pod. Nothing moves between the two, so
// reading one after the other can only miss what landed meanwhile: a lag.
// An append retried (MayHaveLanded) in the deltas layout looks for its
// name in the checkpoints table too, where an attempt made in the rows
// layout left it. A checkpoint's positions (AppendWithPositions) are saved
// in a transaction after its delta landed, never before: a position may
// lag its coverage, never lead it. The named SQL queries (QueryText) read
// the coverage rows only.
//
// Open creates the schema and the missing tables (under an advisory lock,
// so several processes may open at once), and refuses a table of another
// shape with ErrSchemaMismatch. A table it did not create keeps its shape:
// Open adds to it only the indexes the tier needs where no valid index
// serves (coverage by (topic, partition, sink), checkpoints by (writer,
// committed_at)), and changes no column, key or constraint. A name column
// whose collation is not deterministic is another shape: it would compare
// distinct names equal, one destination's coverage counting as another's.
//
// # Gap states
//
// The Tier is a durable.StateStore over the gap_states table (created on
// Open with the others, so an old schema gains it, with an index by
// (topic, partition, sink)): one row per event, keyed by its ID, added by
// one INSERT ... ON CONFLICT (id) DO NOTHING per call and never updated,
// so writers' events are kept side by side and a retry adds nothing;
// AppendStates returns nil only once the table holds every ID of the
// call. A row no event can be fails the read. Never read as coverage.
package postgres
