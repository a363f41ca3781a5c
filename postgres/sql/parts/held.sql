-- The gap states (package gapstate) over the sinks' gaps, after
-- {{gap_ctes}}: classified holds every destination's missing batches once,
-- as multiranges by kind: a sink's batches in the state of the latest
-- decision about them (by decided_at, then id; the sink's own events and
-- the reference's of the partition but its refusals) under that event,
-- the rest of its gaps replay, and the reference's holes
-- verify-reference. A reopen leaves its batches replay; a state is never
-- coverage: it only sorts missing batches, never removes one. The gap
-- states table is read with one row per id. Expanded where a query says
-- {{held}}.
state_events AS (
    SELECT DISTINCT ON (g.sink, g.topic, g."partition", e.id) g.sink, g.topic, g."partition", e.id AS event_id,
           int8range(e.range_start, e.range_end) AS r, e.state, e.decided_at
    FROM sink_gaps g
    CROSS JOIN params p
    JOIN {{gap_states}} e ON e.topic = g.topic AND e."partition" = g."partition"
     AND (e.sink = g.sink OR (e.sink = p.reference AND e.state <> 'refused'))
    WHERE NOT isempty(g.missing)
    ORDER BY g.sink, g.topic, g."partition", e.id
),
decided AS (
    -- each event's batches no later decision about the same destination holds
    SELECT s.sink, s.topic, s."partition", s.event_id, s.state,
           multirange(s.r) - coalesce((
               SELECT range_agg(l.r) FROM state_events l
               WHERE l.sink = s.sink AND l.topic = s.topic AND l."partition" = s."partition"
                 AND (l.decided_at, l.event_id COLLATE "C") > (s.decided_at, s.event_id COLLATE "C")
           ), '{}'::int8multirange) AS r
    FROM state_events s
),
held AS (
    SELECT g.sink, g.topic, g."partition", d.state AS kind, d.event_id, g.missing * d.r AS missing
    FROM sink_gaps g
    JOIN decided d ON d.sink = g.sink AND d.topic = g.topic AND d."partition" = g."partition"
    WHERE d.state <> 'reopened'
),
held_union AS (
    SELECT sink, topic, "partition", range_agg(missing) AS missing
    FROM held
    GROUP BY sink, topic, "partition"
),
classified AS (
    SELECT g.sink, g.topic, g."partition", 'replay' AS kind, CAST(NULL AS text) AS event_id,
           g.missing - coalesce(u.missing, '{}'::int8multirange) AS missing
    FROM sink_gaps g
    LEFT JOIN held_union u ON u.sink = g.sink AND u.topic = g.topic AND u."partition" = g."partition"
    UNION ALL
    SELECT sink, topic, "partition", kind, event_id, missing FROM held
    UNION ALL
    SELECT sink, topic, "partition", 'verify-reference', CAST(NULL AS text), missing FROM reference_gaps
)
