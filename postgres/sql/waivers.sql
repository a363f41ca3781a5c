-- waivers: every waived range (package gapstate: an operator accepted the
-- loss of a range for a sink) with who, when and why, whether or not it
-- still holds: an audit trail, never an erasure, and never coverage. A
-- waiver stays listed after its batches are covered (a covered batch is no
-- gap, whatever was decided about it); missing_batches says how many of
-- its batches are still in a gap of its sink (of every sink of the
-- partition, counted per sink, for a waiver of the reference, which
-- applies to them all). The same rows as the DuckDB form.
--
-- Parameters: reference (required); sink, topic, partition (NULL matches
-- everything) select the waivers by their own sink, topic and partition;
-- acked extents and named sinks (JSON text, '[]' for none), as the gaps
-- query's.
{{gap_ctes}},
waivers AS (
    SELECT DISTINCT ON (e.id) e.*
    FROM {{gap_states}} e CROSS JOIN params p
    WHERE e.state = 'waived'
      AND (p.sink IS NULL OR e.sink = p.sink)
      AND (p.topic IS NULL OR e.topic = p.topic)
      AND (p."partition" IS NULL OR e."partition" = p."partition")
    ORDER BY e.id
),
still_missing AS (
    SELECT w.id, sum(CAST(upper(r) - lower(r) AS numeric)) AS missing_batches
    FROM waivers w
    CROSS JOIN params p
    JOIN sink_gaps g
      ON g.topic = w.topic AND g."partition" = w."partition" AND (g.sink = w.sink OR w.sink = p.reference)
    CROSS JOIN LATERAL unnest(g.missing * multirange(int8range(w.range_start, w.range_end))) AS r
    GROUP BY w.id
)
SELECT w.id AS event_id, w.sink, w.topic, w."partition", w.range_start AS "start", w.range_end AS "end",
       w.reason, w.decided_by, w.decided_at,
       coalesce(m.missing_batches, 0) AS missing_batches
FROM waivers w
LEFT JOIN still_missing m ON m.id = w.id
ORDER BY w.decided_at, w.id COLLATE "C"
