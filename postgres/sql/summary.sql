-- summary: per sink, against a reference (raw by default): the batches it
-- covers, how many gaps it has, how many batches they miss, and its oldest
-- gap (the one starting at the lowest batch id). The gaps are the gaps
-- query's, the reference's own holes included: the reference has a row too.
-- A gap in a gap state (parts/held.sql) counts as the gaps query lists it,
-- missing like any other; refused_batches, unrecoverable_batches and
-- waived_batches say how many of the missing batches are in each state.
--
-- Parameters: reference (required); sink, topic, partition (NULL matches
-- everything); acked extents and named sinks (JSON text, '[]' for none),
-- as the gaps query's.
{{gap_ctes}},
{{held}},
gap_rows AS (
    SELECT x.sink, x.topic, x."partition", lower(g) AS gap_start, upper(g) AS gap_end, x.kind
    FROM classified x
    CROSS JOIN LATERAL unnest(x.missing) AS g
),
listed AS (
    SELECT sink FROM sinks
    UNION
    SELECT r.sink FROM selected r CROSS JOIN params p
    WHERE r.sink = p.reference AND (p.sink IS NULL OR r.sink = p.sink)
    UNION
    -- the reference where it has holes, even in partitions it has no rows of
    SELECT sink FROM gap_rows
),
covered AS (
    SELECT s.sink, count(*) AS ranges, sum(CAST(upper(r) - lower(r) AS numeric)) AS covered_batches
    FROM selected s CROSS JOIN LATERAL unnest(s.covered) AS r
    GROUP BY s.sink
),
missing AS (
    SELECT sink, count(*) AS gaps, sum(CAST(gap_end - gap_start AS numeric)) AS missing_batches,
           sum(CAST(gap_end - gap_start AS numeric)) FILTER (WHERE kind = 'refused') AS refused_batches,
           sum(CAST(gap_end - gap_start AS numeric)) FILTER (WHERE kind = 'unrecoverable') AS unrecoverable_batches,
           sum(CAST(gap_end - gap_start AS numeric)) FILTER (WHERE kind = 'waived') AS waived_batches
    FROM gap_rows
    GROUP BY sink
),
oldest AS (
    SELECT sink, topic, "partition", gap_start, gap_end,
           row_number() OVER (PARTITION BY sink ORDER BY gap_start, topic COLLATE "C", "partition") AS n
    FROM gap_rows
)
SELECT l.sink, coalesce(c.ranges, 0) AS ranges, coalesce(c.covered_batches, 0) AS covered_batches,
       coalesce(m.gaps, 0) AS gaps, coalesce(m.missing_batches, 0) AS missing_batches,
       o.topic AS oldest_gap_topic, o."partition" AS oldest_gap_partition,
       o.gap_start AS oldest_gap_start, o.gap_end AS oldest_gap_end,
       coalesce(m.refused_batches, 0) AS refused_batches, coalesce(m.unrecoverable_batches, 0) AS unrecoverable_batches,
       coalesce(m.waived_batches, 0) AS waived_batches
FROM listed l
LEFT JOIN covered c ON c.sink = l.sink
LEFT JOIN missing m ON m.sink = l.sink
LEFT JOIN oldest o ON o.sink = l.sink AND o.n = 1
ORDER BY l.sink COLLATE "C"
