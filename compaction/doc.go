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
// rows read are every row of the files replaced, whatever their sink
// column says: a row of another sink filed there is coverage.ErrCorrupt,
// not left behind when its file goes. The merge of manifests that follows
// changes no data file, which it checks before and after its commit.
//
// A merged row keeps the latest recorded_at of the rows it merged, so that
// lag in time does not restart at every compaction.
//
// Compact and Maintain work on the coverage table only: the gap states
// table beside it (gap_states) keeps its snapshots and files, and no row
// of it is ever read as coverage.
package compaction
