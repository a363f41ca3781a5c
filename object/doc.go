// Package object is the durable tier as one small object per sink under
// conditional writes: on S3 (or any store that honours If-Match and
// If-None-Match) as the primary where raw lands in object storage, and in
// a local directory for one machine.
//
// # The invariant it owns
//
// A sink's object only ever grows by union: a checkpoint reads the object,
// merges its ranges into what it read, and writes the result only if the
// object is still the version it read (If-Match; If-None-Match: * to
// create). A lost race re-reads and re-merges, so no writer's ranges are
// dropped; a write of unknown outcome is retried the same way, which is
// harmless because a union is idempotent. An object that cannot be read
// (an unknown format version, a bad checksum) is never overwritten.
// Stores that get conditional writes wrong would break this silently, so
// CheckStore proves the store honours them before the Store writes.
package object
