// Package covmap is the pod sidecar's coverage map: a page (GET /) drawing,
// per sink, topic and partition, a bar over the reference's (raw's) extent
// with the committed coverage, the gaps against the reference, the
// reference's own holes and this pod's pending ranges, and its data (GET
// /v1/map), aggregated per sink and per topic first so that a map of
// 10,000 destinations stays small, with sink and topic filters to zoom into
// partition bars.
//
// The header says how old the map is: the table snapshot's commit time, in
// UTC with its age (the read's time where the source has no commit time).
// The view (sink, topic, the box that lists partitions without gaps, the
// page) lives in the URL, the query string or the hash alike (sink=,
// topic=, gaps=0, offset=), so that a copied URL opens the same view; a
// name is its exact bytes there too. Each bar with replay work links to
// its replay tasks: the sidecar's GET /v1/plan for exactly that sink,
// topic and partition.
//
// A gap a replay cannot close (a gap state of package gapstate holds it:
// refused, unrecoverable, waived) is drawn in its own colour and listed
// under its bar with the decision behind it, the reason quoted as the
// decider's text; it is still counted as missing.
//
// Gaps come from the durable tier only, exactly as the recovery worker and
// the gaps command see them (recovery.Plan over the coverage table, with the
// source's acked extents TableSource.Extents gives, so a stream's lost
// first or last stretch is drawn as a hole of raw), and their
// ages from the table's recorded_at column (recovery.Dating, shared with the
// gap metrics); pending ranges come from the
// pod's local tier (local.Store's Diagnostics).
//
// # The invariant it owns
//
// The map never shows more coverage than the durable tier holds: covered
// means committed in the table; pending (recorded here, not checkpointed) is
// drawn apart from it and never closes a gap; a gap is drawn until the table
// covers it. A failed read of the table is an error on the page (HTTP 503
// from /v1/map), never an empty map that would read as "no gaps", and a cut
// list says how much it left out. Ages are lower bounds where compaction
// has merged rows (a merged row keeps the latest time of the rows it
// merged), and the page says so.
package covmap
