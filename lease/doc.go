// Package lease elects one holder at a time per (deployment, role): the
// process that runs a deployment's fleet work (package fleet) while every
// other pod waits. It builds on what the durable tier's store already
// guarantees and adds no consensus of its own:
//
//   - Object: a small lease object beside the sink objects (object.Blobs),
//     written only under a precondition. The holder renews it every TTL/3
//     with If-Match on the version it wrote; a contender takes it over
//     only after seeing the same version unchanged for a whole TTL by its
//     own clock, with If-Match on that version (Kubernetes' leader election
//     does the same: no two clocks need agree, only tick at about the same
//     rate). Close writes the object released, so a contender takes it at
//     once.
//   - Postgres: a session-level advisory lock on a dedicated connection,
//     held while that session lives. Losing the connection is losing the
//     lease; the server ends the session of a holder that went silent
//     (idle_session_timeout = TTL), freeing the lock.
//
// # The invariant it owns
//
// A holder stops believing it holds the lease (the context Acquire
// returned ends) before any other contender can take it: after a renewal
// that failed or was refused, and at the latest RenewDeadline (2/3 TTL) by
// its own clock after the start of its last successful renewal, which is
// before a contender that saw that renewal can have waited a TTL.
//
// Safety never depends on the lease. A process paused longer than the
// TTL (a stop-the-world pause, a frozen VM, a partition that outlives the
// renewal timeout) resumes still running its work until its next renewal
// fails, so two holders can overlap. That only wastes work: every fleet
// job writes by union under conditional commits (the replica's rewrite
// under Iceberg's optimistic commit, a compaction's set-equal rewrite,
// the object tier's If-Match), and the gap metrics only read. The lease
// saves the store from N pods doing the same work; it is never what keeps
// coverage from leading.
package lease
