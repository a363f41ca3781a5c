// Package pod runs one covmirror pod in-process: the pod `covmirror serve`
// runs, for a program that embeds covmirror. Start opens the coverage
// table, the durable tier (tier.Open), the stored sources' positions, the
// local tier, the Mirror that checkpoints it, the record API (sidecar)
// with /debug/coverage and the coverage map, the read-only metrics
// listener (/healthz, /readyz, /metrics: health.go), and the fleet role
// (package fleet): the gap metrics' refresh and, when the table is the
// replica of another tier, the replica loop, run by every pod, by the pod
// holding the deployment's lease, or by none (Options.Fleet); Run
// checkpoints every Options.Interval until its context ends, then shuts
// the pod down.
//
// The invariant it owns is the shutdown order, which makes a 200 mean what
// the final checkpoint carries:
//
//  1. the fleet role's jobs (gap metrics, replica loop) stop and its lease
//     is released, so that another pod takes it over at once;
//  2. the record API stops accepting, answers 503 to new writes and lets
//     requests in flight finish within Options.ShutdownWindow; a record
//     request not done by then answers 503 and its caller retries it;
//  3. the Mirror closes: its final checkpoint carries every record
//     answered 200 (sidecar's record gate waits for them before it);
//  4. the positions, then the durable tier are closed;
//  5. the metrics listener closes last, so that a scrape during the final
//     checkpoint answers; /readyz has answered 503 shutting-down since
//     step 1.
//
// A write the durable tier refused stays pending in the local tier; the
// next pod on this state directory checkpoints it.
package pod
