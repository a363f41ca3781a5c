// Package recovery plans from committed coverage only: Resume is what a new
// owner of a partition reads after a rebalance, Plan is the single recovery
// worker's plan, CommittedGaps the gaps both are made of, and Recover
// carries a plan out. It reads any durable.Tier and knows no concrete one.
//
// # The invariant it owns
//
// A plan never claims a batch the durable tier does not hold committed: a
// sink's replay is measured against the reference's (raw's) committed
// coverage, so coverage a dead pod never checkpointed is replayed (a lag),
// never assumed (a lead), and a truncated plan says so (ErrPlanTruncated)
// rather than dropping work silently.
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
// verification re-recorded it. A rebalancing owner passes the broker's
// committed position of each partition it takes over, as a batch id, as the
// extent's End.
//
// Dating is the one dating of a gap, by the recorded times of the rows
// that show it, which the gap metrics and the coverage map share: an age
// from it is a lower bound, never more than the rows prove.
//
// Readers read what they are asked: a plan of a selection (PlanOptions.Select)
// reads the tier by its partitions and is exactly the whole plan's tasks of
// the selected destinations, ResumePartitions reads many partitions at once
// and gives each what Resume gives it, and a plan of everything is linear in
// destinations plus gaps.
//
// Recover closes such a hole only as far as a ReferenceVerifier read raw
// back and found the batches: it records exactly what the verifier
// returned, never the task's whole range, and without a verifier it records
// nothing and says so.
//
// RecoverStates records what a replay cannot close (a RefusedError, an
// UnrecoverableError) as gap states and carries on; a state is never
// coverage, so nothing it records can close a gap.
package recovery
