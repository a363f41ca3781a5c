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
// it holds, it inherits from the design's invariant:
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
// By default records are not fsynced: a killed process loses nothing Pebble
// accepted, a machine that loses power may lose the last records, and that
// costs one replay interval, which the design accepts because coverage may
// lag. Options.Sync makes every record durable before Record returns, at the
// price of an fsync each. Checkpoint bookkeeping follows the same setting:
// losing a mark only makes the next checkpoint carry its ranges again, and
// a duplicated row is harmless to the durable table.
//
// # Failures
//
// A directory held by another process fails with ErrLocked; a corrupt store
// with coverage.ErrCorrupt; a store of another format with
// ErrIncompatibleFormat. Each names the directory and the remedy: move it
// aside and resume from the durable checkpoint, which Options.RecoverCorrupt
// does automatically.
package local
