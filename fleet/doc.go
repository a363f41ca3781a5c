// Package fleet runs a deployment's fleet work, the jobs that need to run
// once per deployment rather than once per pod, only while this process
// holds the deployment's lease (package lease): the gap metrics' refresh,
// which reads the whole coverage table, and the replica loop, which
// rewrites it. A Role acquires the lease, runs every job now and then on
// its own interval, stops them all when the lease is lost, waits for them
// to return, and contends again. Without a lease a Role runs its jobs all
// the time: a deployment small enough for every pod to do the fleet work.
//
// # The invariant it owns
//
// A job runs only under a held lease: its context ends when the lease is
// lost, and the Role contends again only after every job has returned.
// This saves work; it is not what keeps coverage from leading: two
// holders at once (a paused process) only repeat work, because every job
// writes by union under conditional commits or only reads.
package fleet
