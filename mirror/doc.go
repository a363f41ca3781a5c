// Package mirror ties the pod-local tier to a durable tier. Record goes to
// the pod-local tier; Sync checkpoints everything pending into the durable
// tier (any durable.Tier: the coverage table, the sink objects, the
// PostgreSQL rows); Run calls Sync on an interval (the knob of
// docs/design.md) with capped backoff; Close runs a final checkpoint. What a
// new owner and the recovery worker read from the durable tier afterwards is
// package recovery's; mirror knows no concrete tier.
//
// # The invariant it owns
//
// Nothing is marked checkpointed before the durable commit returned: Sync
// appends a checkpoint to the durable tier and only then commits it in the
// local tier. A checkpoint whose commit failed, or whose outcome is unknown,
// stays in flight; the next Sync looks for it in the durable tier by name
// before it appends it again. Checkpoint calls that arrive while one runs
// are served by one next checkpoint, which began after they arrived and so
// carries what they recorded; none is reported done by a checkpoint that
// began before it. A commit that landed only some destinations (a
// durable.PartialError: a sink object that cannot be read) marks only
// those, and the others stay pending for the next checkpoint, so one broken
// sink holds no other back. Snapshot expiry, where the tier has snapshots
// (durable.Expirer), runs only after a checkpoint landed and never changes
// what is covered. Release, on a partition's revocation, checkpoints and
// then drops the local state of the partition's destinations whose every
// range the durable tier holds (local.Store.Release); a failed checkpoint
// drops nothing. A new owner and the recovery planner read only the
// durable tier, so coverage a dead pod never checkpointed is replayed (a
// lag), never assumed (a lead).
package mirror
