// Package object is the durable tier as small objects under conditional
// writes: on S3 (or any store that honours If-Match and If-None-Match) as
// the primary where raw lands in object storage, and in a local directory
// for one machine. It has two layouts (Options.Layout); every Tier reads
// both, so a location moves from one to the other without a stop.
//
//   - The sinks layout: one object per sink, read, merged and written back
//     under If-Match by every checkpoint. Simple, and every writer of a
//     sink meets every other at that one compare-and-swap: right for a
//     handful of pods.
//   - The deltas layout: each checkpoint is one new object (a delta,
//     created with If-None-Match under deltas/<writer>/<name>.<digest>,
//     so a key's content never changes), which no other writer ever
//     touches, of the size of what it carries. Fold, run
//     by one process of the deployment (two at once only waste work),
//     merges the deltas, and the sink objects of the sinks layout, into
//     bases, one per topic and group of GroupSize partitions holding every
//     sink, under If-Match; then it writes a fold log of the names it
//     folded (for Landed), deletes the deltas and empties the sink objects
//     (under If-Match: a writer of the sinks layout still running loses
//     nothing). A reader of one partition reads one base and the deltas
//     not yet folded. Where the Blobs is a BatchBlobs (a table:
//     postgres.Blobs), Fold reads, writes and deletes a batch of keys a
//     request, not a request a key. Right for a fleet: see docs/scale.md.
//
// The deltas layout's invariant is the same union: a base only grows, and
// a delta or a sink object's ranges leave it only after every base they
// touch was written with them. A reader reads the sink objects, then the
// bases, then the deltas it listed before the bases; a listed delta gone
// when read was folded meanwhile, and the bases are read again (see view).
// A delta that cannot be read (corrupt, or a newer build's) is left out of
// reads, logged and counted (Stats.Unreadable), and never folded or
// deleted: it carries any sinks, so failing on it would stop every reader;
// leaving it out lags (its batches are replayed), never leads.
//
// # The invariant it owns
//
// A sink's object only ever grows by union: a checkpoint reads the object,
// merges its ranges into what it read, and writes the result only if the
// object is still the version it read (If-Match; If-None-Match: * to
// create). A lost race re-reads and re-merges, so no writer's ranges are
// dropped; a write of unknown outcome is retried the same way, which is
// harmless because a union is idempotent. An object that cannot be read
// (an unknown format version, a bad checksum) is never overwritten: every
// append to its sink and every read of it fails, naming it, while other
// sinks go on: a checkpoint that touches it writes every other sink and
// returns a *durable.PartialError naming it and listing what landed, so
// that only that lands as committed in the local tier (Landed counts it as
// not holding a name, which can only cost a re-append).
// Stores that get conditional writes wrong would break this silently, so
// CheckStore proves the store honours them before the Tier writes.
//
// # Shape
//
// Each sink has one object under "sinks/" (Options.Prefix before it), its
// key the sink name in lowercase base32 (cut and given a hash suffix when
// too long), so that any name maps to a safe key and two names never share
// one; the object holds the exact name, checked on read. The object is the
// versioned, checksummed format of format.go: per (topic, partition) the
// covered ranges as delta varints (about 3 bytes per range), the last
// writer and time per destination (Tier.LastWrites, for the lag query),
// and each writer's recent checkpoint names with the checkpoint's digest
// and sink count (MaxNamesPerWriter per writer, MaxWriters writers).
//
// One Append writes each sink object it touches once (group commit), after
// checking every one of them for a reused name. A checkpoint that failed
// after some of its sinks landed returns an error; the caller keeps it
// pending and appends it again with MayHaveLanded, and the sinks that hold
// its name skip it. Landed is true only when every sink the checkpoint
// touched holds its name with the same digest: a partly written checkpoint
// reads as not landed, which costs a harmless re-append.
//
// # Gap states
//
// The Tier is a durable.StateStore: each AppendStates call is one
// write-once object under "gap_states/" (a JSON array of its events),
// keyed by its first event's ID and its bytes' digest, created under
// If-None-Match and never changed, so every writer's events are kept (a
// union) and a retry finds its own bytes there. States lists the prefix
// and reads each object once per Tier (a key's content is fixed); a
// listed object that is missing, torn, or not the bytes its key names
// fails the read: it is never read as events, nor as none. A listing
// that lags only makes the newest events late. Never read as coverage.
package object
