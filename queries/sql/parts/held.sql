-- The gap states (package gapstate) over the sinks' gaps, after
-- {{gap_ctes}}: classified is every gap of gap_rows once, cut where the
-- decisions about it differ, each piece with its kind (replay,
-- verify-reference, or the state holding it out of the plan: refused,
-- unrecoverable, waived) and event_id, the deciding event (NULL for the
-- first two). A batch is in the state of the latest decision about it
-- (by decided_at, then event_id) among the sink's own events and the
-- reference's of the partition but its refusals; a reopen leaves it
-- replay. A state never removes a batch from a gap: it only sorts it.
-- Ranges are cut at every event boundary inside a gap, so that an event
-- holds each piece whole or not at all; the gap_states relation is read
-- with one row per event_id. Expanded where a query says {{held}}.
state_events AS (
    SELECT DISTINCT d.sink, d.topic, d."partition", e.event_id, e.range_start, e.range_end, e.state, e.decided_at
    FROM (SELECT DISTINCT sink, topic, "partition" FROM holes WHERE gap_start < gap_end) d
    JOIN (SELECT * FROM gap_states
          QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY decided_at, state, sink, topic, "partition", range_start, range_end) = 1) e
      ON e.topic = d.topic AND e."partition" = d."partition"
     AND (e.sink = d.sink OR (e.sink = $reference AND e.state <> 'refused'))
),
decided_gaps AS (
    -- the sinks' gaps some event overlaps: only these are cut
    SELECT h.sink, h.topic, h."partition", h.gap_start, h.gap_end
    FROM holes h
    WHERE h.gap_start < h.gap_end AND EXISTS (
        SELECT 1 FROM state_events s
        WHERE s.sink = h.sink AND s.topic = h.topic AND s."partition" = h."partition"
          AND s.range_start < h.gap_end AND s.range_end > h.gap_start)
),
cuts AS (
    SELECT sink, topic, "partition", gap_start, gap_end, gap_start AS cut_at FROM decided_gaps
    UNION
    SELECT g.sink, g.topic, g."partition", g.gap_start, g.gap_end, b.cut_at
    FROM decided_gaps g
    JOIN (SELECT sink, topic, "partition", range_start AS cut_at FROM state_events
          UNION
          SELECT sink, topic, "partition", range_end FROM state_events) b
      ON b.sink = g.sink AND b.topic = g.topic AND b."partition" = g."partition"
     AND b.cut_at > g.gap_start AND b.cut_at < g.gap_end
),
segments AS (
    SELECT sink, topic, "partition", gap_start, cut_at AS seg_start,
           coalesce(lead(cut_at) OVER (PARTITION BY sink, topic, "partition", gap_start ORDER BY cut_at), gap_end) AS seg_end
    FROM cuts
),
verdicts AS (
    -- each segment's latest decision (none: replay)
    SELECT g.sink, g.topic, g."partition", g.gap_start, g.seg_start, g.seg_end,
           CASE WHEN e.state IS NULL OR e.state = 'reopened' THEN NULL ELSE e.event_id END AS event_id,
           CASE WHEN e.state IS NULL OR e.state = 'reopened' THEN 'replay' ELSE e.state END AS kind
    FROM segments g
    LEFT JOIN state_events e
      ON e.sink = g.sink AND e.topic = g.topic AND e."partition" = g."partition"
     AND e.range_start <= g.seg_start AND e.range_end >= g.seg_end
    QUALIFY row_number() OVER (PARTITION BY g.sink, g.topic, g."partition", g.seg_start
                               ORDER BY e.decided_at DESC NULLS LAST, e.event_id DESC NULLS LAST) = 1
),
runs AS (
    -- adjacent segments of one decision (or of none) form one piece
    SELECT *, sum(CASE WHEN event_id IS NOT DISTINCT FROM prev THEN 0 ELSE 1 END) OVER (
        PARTITION BY sink, topic, "partition", gap_start ORDER BY seg_start ROWS UNBOUNDED PRECEDING) AS run
    FROM (SELECT *, lag(event_id) OVER (PARTITION BY sink, topic, "partition", gap_start ORDER BY seg_start) AS prev
          FROM verdicts)
),
classified AS (
    SELECT sink, topic, "partition", min(seg_start) AS gap_start, max(seg_end) AS gap_end, min(kind) AS kind, min(event_id) AS event_id
    FROM runs
    GROUP BY sink, topic, "partition", gap_start, run
    UNION ALL
    SELECT h.sink, h.topic, h."partition", h.gap_start, h.gap_end, 'replay', CAST(NULL AS VARCHAR)
    FROM holes h
    WHERE h.gap_start < h.gap_end AND NOT EXISTS (
        SELECT 1 FROM decided_gaps d
        WHERE d.sink = h.sink AND d.topic = h.topic AND d."partition" = h."partition" AND d.gap_start = h.gap_start)
    UNION ALL
    SELECT sink, topic, "partition", gap_start, gap_end, 'verify-reference', CAST(NULL AS VARCHAR)
    FROM reference_holes
    WHERE gap_start < gap_end
)
