// Package compaction rewrites the coverage table's small files: frequent
// checkpoints leave one small file per checkpoint and sink, and every commit
// pays for their number.
//
// # The invariant it owns
//
// Every destination's covered set is identical before and after a
// compaction. Rows are union-merged per destination (overlapping and
// adjacent ranges join; a hole stays a hole, since closing a gap that was
// not recorded is the over-claim docs/design.md forbids), the merged rows are
// checked set-equal to the inputs before the commit, and the commit replaces
// only the files that were read: checkpoints appended meanwhile survive, and
// of two compactions racing over the same files at most one commits. The
// merge of manifests that follows changes no data file, which it checks
// before and after its commit.
package compaction
