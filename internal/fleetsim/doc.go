// Package fleetsim is a test harness that runs a fleet of pods against a
// durable tier: hundreds of pods checkpointing at an interval, inside a
// testing/synctest bubble so that the tier's modelled latencies pass in
// fake time, with the tier under test and an optional compactor job as
// parameters, so that any durable.Tier (the sink objects, PostgreSQL, the
// coverage table, or a tier not yet written) is measured the same way. It
// is for tests and benchmarks only.
//
// It has three parts. S3 is a simulated bucket (an object.Blobs): each
// request takes a latency drawn from a seed plus its bytes over a
// bandwidth, and a conditional Put is checked when it completes, against
// the key's version then, so overlapping writers race as on S3. Catalog is
// the coverage table's commit as an optimistic swap of one metadata
// pointer (see its comment for why not iceberg-go's SQL catalog). Run is
// the driver: pods owning their shares of topics x partitions x sinks,
// each recording a few batches per partition per interval (sinks other
// than raw failing some, so gaps exist) and checkpointing what it
// recorded since its last checkpoint; a few pods are a real mirror.Mirror
// over a local.Store on Pebble's in-memory file system, the others call
// the tier's Append with the checkpoint a Mirror would send.
//
// # The invariant it checks
//
// After every run, once each pod alone has landed what its failed
// checkpoints left pending and the compactor has run once more, the
// coverage read from the tier through a fresh handle is exactly the union
// of what the pods recorded: nothing more (a lead), nothing less (a
// checkpoint that reported success and did not land). Run fails with
// ErrCoverageMismatch otherwise. The simulated S3 keeps its side: a Put is
// applied only if its precondition holds at completion (object.CheckStore
// passes on it), and nothing a request's context cancelled is applied.
package fleetsim
