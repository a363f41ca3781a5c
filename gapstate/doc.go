// Package gapstate holds the states a gap can be in besides "replay it":
// refused (the sink refuses these batches for ever), unrecoverable (raw no
// longer holds them) and waived (an operator accepted their loss), and the
// reopen that returns a range to the replay plan.
//
// A state is recorded as an Event: a decision about a range of one
// destination, with a reason, who made it and when. Events are kept as a set
// keyed by their ID, so every tier merges them by union, like coverage: two
// writers never overwrite each other, and a retried write is harmless.
// Resolve reads the set: for each batch the latest decision (by At, then ID)
// holds, and a reopen leaves the batch a plain gap. A pod's local tier
// (package local) keeps events first, as it keeps coverage, and its
// checkpoint ships them to the durable tier.
//
// The invariant this package owns: a state is never coverage. Resolve
// subtracts the destination's coverage from every state, so coverage always
// wins (a batch a sink later acknowledges is covered, whatever was decided
// about it), and nothing here can add a batch to a coverage set, to
// SafePosition or to a source position. A state only moves a gap between the
// replay plan and the lists an operator reads; the gap itself stays a gap in
// every count of missing batches, waived ones included.
//
// An event of the reference (raw's sink) is a decision about raw itself:
// raw lost those batches (its retention expired them, say). It applies to
// every sink's gaps of that topic and partition, under the sink's own
// later decisions.
package gapstate
