-- gaps: the ranges of a reference destination (raw by default) that a sink
-- lacks, inner and trailing, for every sink that has rows of the topic or
-- is named in named_sinks; and the reference's own holes as gaps of the
-- reference (sink = the reference), over its span: per partition, from
-- the lowest to the highest batch any destination covers (a sink is
-- written only once raw is durable, so raw held every batch a sink holds)
-- or the source's acked extent in acked_extents holds (the source is acked only once raw is
-- durable). The span is one range, the hull: an extent apart from the
-- rows makes the stretch between a hole too. A partition only sinks have
-- rows of, or only an extent, is one whole hole, unless the reference has
-- no rows at all in a table that has some (a misspelt reference).
-- `covmirror gaps --json` gives these rows, computed in Go, with a kind each.
--
-- The reference's rows are merged first (see coverage.sql). A sink's rows
-- are not: one window pass over them as they are (overlapping, repeated)
-- finds its holes, where a row starts past the furthest end of the rows
-- before it, plus before its first row and after its last; a sink with no
-- rows at all for a reference partition lacks all of it, with $partition
-- set too. Its gaps are its holes within the reference's merged ranges.
-- Not merging the sinks' rows saves two window passes and an aggregate over
-- the largest part of the table; the join is of holes, not rows, so rows
-- that overlap many reference ranges cost no more than their holes.
--
-- Relations: coverage, and acked_extents (topic, "partition", range_start,
-- range_end): per partition at most one [start, end) the source has acked,
-- empty when none is known. An extent only widens the reference's span;
-- sinks are measured against the reference's rows
-- alone (a sink's share of a reference hole is no gap until the hole is
-- verified and re-recorded).
--
-- Relation named_sinks (topic, sink): sinks written to, besides those with
-- rows; one named without rows of a topic lacks all of the reference's
-- ranges there. A row with a NULL topic names a sink of every topic but
-- those that have rows of their own (a row with a NULL sink lists a topic
-- with none named). Empty when none are named.
--
-- Parameters: $reference (the reference sink, required); $sink, $topic,
-- $partition (NULL matches everything).
--
-- Each gap comes with its kind: replay, verify-reference (a hole of the
-- reference), or the gap state holding it out of the plan (refused,
-- unrecoverable, waived) and event_id, the deciding event (NULL for the
-- first two), from the gap_states relation (parts/held.sql): a gap in a
-- state is still listed, cut where the decisions about it differ.
--
-- The CTEs this query shares with summary and lag are in parts/, expanded
-- where it says {{name}}.
WITH {{selected}},
merge_input AS (
    -- only the reference's rows are merged. DISTINCT: repeated rows go, and
    -- what remains is totally ordered by (range_start, range_end) within a
    -- partition, so that both window passes see one order
    SELECT DISTINCT sink, topic, "partition", range_start, range_end
    FROM selected
    WHERE sink = $reference
),
{{gap_ctes}},
{{held}}
SELECT sink, topic, "partition", gap_start AS "start", gap_end AS "end", kind, event_id
FROM classified
ORDER BY sink, topic, "partition", "start", "end"
