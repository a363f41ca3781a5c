-- waivers: every waived range (package gapstate: an operator accepted the
-- loss of a range for a sink) with who, when and why, whether or not it
-- still holds: an audit trail, never an erasure, and never coverage. A
-- waiver stays listed after its batches are covered (a covered batch is no
-- gap, whatever was decided about it); missing_batches says how many of
-- its batches are still in a gap of its sink (of every sink of the
-- partition, counted per sink, for a waiver of the reference, which
-- applies to them all), measured as gaps.sql measures them.
--
-- Relations: coverage, acked_extents, named_sinks, as gaps.sql reads them,
-- and gap_states, read with one row per event_id.
--
-- Parameters: $reference (required); $sink, $topic, $partition (NULL
-- matches everything) select the waivers by their own sink, topic and
-- partition.
WITH {{selected}},
merge_input AS (
    SELECT DISTINCT sink, topic, "partition", range_start, range_end
    FROM selected
    WHERE sink = $reference
),
{{gap_ctes}},
waivers AS (
    SELECT * FROM gap_states
    WHERE state = 'waived'
      AND (CAST($sink AS VARCHAR) IS NULL OR sink = $sink)
      AND (CAST($topic AS VARCHAR) IS NULL OR topic = $topic)
      AND (CAST($partition AS INTEGER) IS NULL OR "partition" = $partition)
    QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY decided_at, sink, topic, "partition", range_start, range_end) = 1
),
still_missing AS (
    SELECT w.event_id, sum(CAST(least(w.range_end, g.gap_end) - greatest(w.range_start, g.gap_start) AS DECIMAL(38,0))) AS missing_batches
    FROM waivers w
    JOIN holes g
      ON g.topic = w.topic AND g."partition" = w."partition"
     AND (g.sink = w.sink OR w.sink = $reference)
     AND g.gap_start < g.gap_end AND g.gap_start < w.range_end AND g.gap_end > w.range_start
    GROUP BY w.event_id
)
SELECT w.event_id, w.sink, w.topic, w."partition", w.range_start AS "start", w.range_end AS "end",
       w.reason, w.decided_by, w.decided_at,
       coalesce(m.missing_batches, CAST(0 AS DECIMAL(38,0))) AS missing_batches
FROM waivers w
LEFT JOIN still_missing m ON m.event_id = w.event_id
ORDER BY w.decided_at, w.event_id
