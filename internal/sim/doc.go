// Package sim is a seeded whole-pod simulation of covmirror, in the spirit
// of Pebble's metamorphic tests, on the simulated pipeline of package
// internal/demo.
//
// The pipeline (demo.Pipeline, demo.Store) is a source, raw and sinks that
// keep their own contents: the truth coverage is checked against. Run drives a real
// pod through a random sequence of steps drawn from a seed: sink writes
// (some refused), records after acks (coverage.WriteThenRecord through a
// mirror.Mirror on a local.Store on Pebble), checkpoints (Mirror.Sync into
// the durable tier), compactions, crashes and reopenings of the pod without
// a final checkpoint, rebalances to a new owner (recovery.Resume from the
// durable tier alone, then replay), and plan-and-recover (recovery.Plan,
// recovery.Recover), with faults injected at random into the local tier's
// filesystem, the warehouse's file IO and the catalog (commits and loads
// refused, answers lost after a commit landed).
//
// The durable tier (Config.Durable) is the coverage table, an
// iceberg.Table in a SQLite catalog; or the object store, an object.Tier
// over a directory behind faults of its own (reads and listings that fail,
// writes refused, writes applied whose answer is lost, spurious
// precondition failures); or PostgreSQL, a postgres.Tier in a fresh schema
// on a real server, behind faults at the durable.Tier seam (appends
// refused, appends applied whose answer is lost, coverage reads that fail)
// and transactions the server aborts as serialization failures. On the
// object and PostgreSQL tiers the coverage table is the replica:
// replica.Replicate copies the primary into it, and it is compacted there.
//
// # What it checks
//
// The invariant: coverage and source positions may lag, never lead. After
// every step, against the simulated stores' real contents:
//
//   - committed coverage, read from the durable tier, never claims a batch
//     its sink does not hold;
//   - the local tier never claims one either;
//   - every range the local tier marks checkpointed is in the durable tier;
//   - on the object and PostgreSQL tiers, the replica table never claims
//     a range the primary lacks (it may lag, never lead);
//   - gap states (steps where a sink starts refusing a range, raw loses
//     one, an operator waives or reopens, recorded through a state store
//     behind faults of its own, and the recovery worker's RecoverStates
//     recording what its replays meet): recording one never changes
//     coverage, no batch a sink refuses is covered, CommittedGaps with the
//     states lists exactly the gaps without them (every missing batch,
//     held or not, once), and no replay task holds a batch in a state.
//     A tier that keeps no states yet has them in memory beside it.
//
// Once faults stop, an operator fixes every sink, restores raw and reopens
// every held gap, and recovery has run to quiescence: every sink holds
// every batch raw holds, and the durable tier's coverage says so,
// including batches whose raw coverage record was lost (raw holds the
// batch, but a crash or a failed local write dropped its record); the
// coverage table lists no data file twice (no commit applied twice); on the
// object and PostgreSQL tiers, one more replication makes the replica
// equal to the primary; no gap is held any more;
// and a compaction of the coverage table goes through.
//
// A failure names the seed; the same seed replays the same run.
package sim
