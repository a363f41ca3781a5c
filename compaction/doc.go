// Package compaction will rewrite the coverage table's small files and expire
// old snapshots on a schedule.
//
// The invariant it owns: every destination's covered set is identical before
// and after a compaction; adjacent ranges may merge, a gap never closes.
package compaction
