// Package postgres is the durable tier as PostgreSQL tables (14 or later):
// per (sink, topic, partition) one row whose covered column is an
// int8multirange of batch ids, beside a table of checkpoint names and one
// of stored source positions, all in one schema (Options.Schema).
//
// # The invariant it owns
//
// A destination's coverage only ever grows by union: every write is an
// upsert that sets covered = covered + new, PostgreSQL's multirange union,
// under the row lock ON CONFLICT takes, so concurrent writers in any
// number of processes each keep their ranges and none overwrites another.
// The rows of one write are locked in destination order, so writers of
// overlapping destinations do not deadlock.
//
// A checkpoint's name is bound to its payload: Append inserts (writer,
// name, digest) in the same transaction as the ranges, so either both
// commit or neither does. An append of unknown outcome appended again
// finds its name with the same digest and writes nothing; the same name
// with another payload is durable.ErrNameReused and writes nothing. Every
// name is kept (the table has no bound, a row of about a hundred bytes per
// checkpoint): Landed is exact. Pruning old names is left to the operator
// (DELETE by committed_at); a name pruned and appended again costs a
// duplicate union, which is harmless.
//
// RecordInTx is the exactly-once path for a relational sink: the coverage
// upsert runs in the caller's transaction, so a sink's rows and their
// coverage commit or roll back together.
//
// Open creates the schema and the missing tables (under an advisory lock,
// so several processes may open at once), and refuses a table of another
// shape with ErrSchemaMismatch: a table it did not create is never
// altered.
package postgres
