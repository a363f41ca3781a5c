// Package local is the pod-local tier: a coverage.Store on Pebble in a
// directory on the pod's own disk, written cheaply and often, and
// checkpointed to the durable tier on an interval.
//
// # The invariant it owns
//
// This tier is a write-behind buffer with an inspection surface. It is never
// authoritative, never the only copy of anything that matters, and never read
// by another node: not by a new owner after a rebalance, not by a recovery
// agent, not by an operator tool (which asks the running pod's Handler). What
// it holds, it inherits from the invariant of docs/design.md:
//
//   - A range is recorded only after the sink's durable acknowledgement.
//   - A range is pending until a checkpoint containing it has been committed
//     to the durable tier; only after that commit has returned is it marked
//     checkpointed (CommitCheckpoint), atomically. A checkpoint that fails
//     leaves everything pending, and ranges recorded while one is in flight
//     stay pending for the next. Nothing is ever marked checkpointed that the
//     durable tier does not hold.
//
// # Data model
//
// One key per covered range, (sink, topic, partition, start) -> end, ordered
// by start, so a destination's coverage is a prefix scan (keys.go has the
// encoding). Recording merges: a range that overlaps or touches stored ranges
// becomes one key and the absorbed keys are deleted in the same Pebble batch,
// so a million in-order single-batch records leave one key. Checkpointed
// ranges are kept the same way under their own prefix; pending is covered
// minus checkpointed. An in-memory index of both is rebuilt from Pebble on
// open and changed only after a Pebble commit succeeded.
//
// # Durability is a knob
//
// By default records are not fsynced, but every commit is handed to the
// operating system: Record stages a record in memory for up to
// Options.CommitDelay (2ms by default), then the write-behind commit writes
// it with the records around it, and each commit makes Pebble's WAL writer
// write its buffered block to the WAL file before it returns (walsync.go;
// Pebble alone would keep that block in the process until a later synced
// write, up to a checkpoint interval away). So a killed process (SIGKILL,
// OOM) loses at most the records of the last CommitDelay and the commit
// then running; a machine that loses power, or a node that is lost, loses
// everything since the last fsync. Neither loses anything before the last
// synced write, which BeginCheckpoint always is. Losing records costs a
// replay of the gaps, which docs/design.md accepts because coverage may
// lag. Options.Sync makes every record durable (fsynced) before Record
// returns, at the price of an fsync each.
//
// Checkpoint names are never reused, whatever a crash keeps: BeginCheckpoint
// is synced whatever Options.Sync says (once per checkpoint), so a name
// reaches the durable tier only after its checkpoint, its ranges and the
// counter past it are durable, and each open adds a random run to the names
// (Checkpoint.Run) for a disk that loses synced data anyway. Marking and
// aborting follow Options.Sync: losing one resumes the checkpoint, under its
// name, for the caller to look for in the durable tier (Checkpoint.Resumed)
// and mark if it landed; a duplicated row is harmless to the durable table.
//
// # Releasing partitions
//
// A pod that no longer owns a partition releases it (Release; the pod
// calls mirror.Mirror.Release, which checkpoints first): the local state
// of its destinations, of every sink, is deleted in one Pebble batch of
// range deletions over their key prefixes, but only of those whose every
// covered range is in a committed checkpoint, so this tier is never the
// only copy of what it drops. Pending is read under the lock Record takes
// and the delete commits under it, so a record that races the release
// keeps its destination (it is pending) or lands after the delete and
// starts the destination afresh; a record is never dropped. Release does
// not refuse later records of the partition: they re-create its state,
// pending as any other record, which is harmless and is checkpointed as
// usual. A process killed (SIGKILL, OOM) between the checkpoint and the
// delete reopens with the released ranges still here: harmless, as they
// are committed (checkpointed, not pending), and the next release drops
// them. The delete is not fsynced unless Options.Sync is set: a power loss
// may bring the ranges back too, as a power loss brings back any unsynced
// state (a checkpoint whose mark was lost resumes and is found by name). Released destinations leave Destinations,
// Diagnostics and every later checkpoint's scan.
//
// # Failures
//
// A directory held by another process fails with ErrLocked; one the process
// may not write (permission denied, a read-only file system) with
// ErrNotWritable; a corrupt store with coverage.ErrCorrupt; a store of
// another format with ErrIncompatibleFormat. Each names the directory and
// the remedy: move it aside and resume from the durable checkpoint, which
// Options.RecoverCorrupt does automatically. Open reads every key back
// (Pebble verifies the checksums) before it returns, so a garbled table is
// ErrCorrupt from Open, not a failure later.
//
// # Under faults
//
// The invariant holds when the disk fails: covered never leads what was
// recorded, checkpointed never leads covered, and a Record that returned
// nil stays covered while the process lives, across a kill of the process
// once its commit succeeded, and with Sync across a power loss.
//
// Pebble stops on some faults by calling its logger's Fatalf or by
// panicking, and retries failed background jobs for ever; a library may not
// exit the process, so the store fails instead, for good (health.go,
// watchfs.go, scheduler.go): Record and the checkpoint methods return a
// classified error naming the directory, the cause and the remedy, while
// Covered, Destinations and Diagnostics answer from memory, which holds
// only acknowledged records. docs/design.md ("The local tier under
// failures") says how each of Pebble's failure modes is caught, and why.
//
// Records are never dropped: staged records whose write fails stay staged and
// covered in memory (their sinks acknowledged them; nothing else would write
// them again, and a hole in raw's coverage would hide every other sink's gap
// behind it). The write is retried with capped backoff, Diagnostics shows
// the unpersisted keys and the last write error, and Record returns the
// error once MaxUncommitted keys wait or the store has failed. Checkpoint
// bookkeeping is committed in one batch with the staged records, so a mark
// is never persisted without the coverage it marks.
//
// # Gap states
//
// The store keeps gap states (package gapstate) too, the same way: a set
// of events by ID (of two copies of one ID, gapstate.First's) under a key
// kind of their own, so that no state is ever read as coverage, nor
// counted in Destinations, Covered or a checkpoint's ranges. RecordStates
// syncs them whatever Options.Sync says. They are pending until the
// checkpoint (mirror.Mirror) has appended them to the durable tier and read
// them back there (MarkStatesShipped); shipped ones stay, listed by
// Diagnostics. Release leaves them: they are keyed by ID, not destination.
//
// Ranges past coverage.MaxBatchEnd, which an older build accepted, stay
// covered but are left out of every checkpoint, so that the durable tier's
// refusal of them cannot block the checkpoints after: the durable tier lags
// on them, which is safe.
package local
