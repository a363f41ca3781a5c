// Package mirror ties the tiers together. Record goes to the pod-local tier;
// Sync checkpoints everything pending into the durable coverage table; Run
// calls Sync on an interval (the knob of docs/design.md) with capped backoff; Close
// runs a final checkpoint. Resume is what a new owner reads after a
// rebalance and Plan is the single recovery worker's plan, both from the
// durable table only; Recover carries the plan out.
//
// # The invariant it owns
//
// Nothing is marked checkpointed before the durable commit returned: Sync
// appends a checkpoint to the table and only then commits it in the local
// tier. A checkpoint whose commit failed, or whose outcome is unknown, stays
// in flight; the next Sync looks for it in the table by name before it
// appends it again. A commit that landed only some destinations (a
// durable.PartialError: a sink object that cannot be read) marks only
// those, and the others stay pending for the next checkpoint, so one broken
// sink holds no other back. A new owner and the recovery planner read only the
// durable table, so coverage a dead pod never checkpointed is replayed (a
// lag), never assumed (a lead).
//
// Holes in the reference (raw) are findings, not silence: raw's record of a
// batch can be lost while raw holds the batch, and measuring the sinks only
// against raw's coverage would then hide the batch everywhere. Plan and
// Resume report them as verify-reference tasks. They are looked for over
// every batch some destination of the partition covers, from the lowest to
// the highest (a sink is written only once raw is durable, so raw held what
// any sink holds), and over the source's acked extent (coverage.Extent,
// PlanOptions.Extents and ResumeOptions.Extents) where it is known:
// ReferenceHoles is the one definition, which Plan, Resume, CommittedGaps,
// the gap metrics and the coverage map share. An extent only ever widens
// where holes are looked for, never narrows it, so no hole is hidden by an
// extent and an over-reported one costs a verification, never a claimed
// batch: the sinks' replay, in Resume as in Plan, is measured against the
// reference's committed coverage only, so a sink's share of a hole (below
// the extent's start or past raw's last batch alike) is work only once the
// verification re-recorded it. A rebalancing owner passes the broker's committed position of
// each partition it takes over, as a batch id, as the extent's End.
// Recover closes such a hole
// only as far as a ReferenceVerifier read raw back and found the batches:
// it records exactly what the verifier returned, never the task's whole
// range, and without a verifier it records nothing and says so.
package mirror
