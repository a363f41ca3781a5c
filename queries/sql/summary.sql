-- summary: per sink, against a reference (raw by default): the batches it
-- covers, how many gaps it has, how many batches they miss, and its oldest
-- gap (the one starting at the lowest batch id). The gaps are gaps.sql's,
-- the reference's own holes included (over the hull of every batch some
-- destination of the partition covers and of the source's acked extent in
-- acked_extents): the reference has a row too, and so has a sink named in
-- named_sinks. The gaps are found by the very CTEs gaps.sql uses; every
-- destination's rows are merged first, for the covered totals. Batch
-- totals are DECIMAL(38,0): a few ranges near 2^63 overflow BIGINT, in
-- DuckDB, Trino and Spark alike.
--
-- A gap in a gap state (parts/held.sql) counts as gaps.sql lists it,
-- missing like any other; refused_batches, unrecoverable_batches and
-- waived_batches say how many of the missing batches are in each state.
--
-- Relations: coverage, acked_extents, named_sinks and gap_states, as
-- gaps.sql reads them.
--
-- Parameters: $reference (required); $sink, $topic, $partition (NULL matches
-- everything).
--
-- The shared CTEs are in parts/, expanded where it says {{name}}.
WITH {{selected}},
merge_input AS (
    -- every destination's rows are merged: the covered totals count
    -- merged ranges. DISTINCT: repeated rows go, and what remains is
    -- totally ordered by (range_start, range_end) within a destination
    SELECT DISTINCT sink, topic, "partition", range_start, range_end
    FROM selected
),
{{gap_ctes}},
{{held}},
listed AS (
    SELECT sink FROM sinks
    UNION
    SELECT sink FROM merged WHERE sink = $reference AND (CAST($sink AS VARCHAR) IS NULL OR sink = $sink)
    UNION
    -- the reference where it has holes, even in partitions it has no rows of
    SELECT sink FROM gap_rows
),
covered AS (
    SELECT sink, count(*) AS ranges, sum(CAST(range_end - range_start AS DECIMAL(38,0))) AS covered_batches
    FROM merged
    GROUP BY sink
),
missing AS (
    SELECT sink, count(*) AS gaps, sum(CAST(gap_end - gap_start AS DECIMAL(38,0))) AS missing_batches,
           sum(CAST(gap_end - gap_start AS DECIMAL(38,0))) FILTER (WHERE kind = 'refused') AS refused_batches,
           sum(CAST(gap_end - gap_start AS DECIMAL(38,0))) FILTER (WHERE kind = 'unrecoverable') AS unrecoverable_batches,
           sum(CAST(gap_end - gap_start AS DECIMAL(38,0))) FILTER (WHERE kind = 'waived') AS waived_batches
    FROM classified
    GROUP BY sink
),
oldest AS (
    SELECT sink, topic, "partition", gap_start, gap_end,
           row_number() OVER (PARTITION BY sink ORDER BY gap_start, topic, "partition") AS n
    FROM classified
)
SELECT l.sink, coalesce(c.ranges, 0) AS ranges, coalesce(c.covered_batches, CAST(0 AS DECIMAL(38,0))) AS covered_batches,
       coalesce(m.gaps, 0) AS gaps, coalesce(m.missing_batches, CAST(0 AS DECIMAL(38,0))) AS missing_batches,
       o.topic AS oldest_gap_topic, o."partition" AS oldest_gap_partition,
       o.gap_start AS oldest_gap_start, o.gap_end AS oldest_gap_end,
       coalesce(m.refused_batches, CAST(0 AS DECIMAL(38,0))) AS refused_batches,
       coalesce(m.unrecoverable_batches, CAST(0 AS DECIMAL(38,0))) AS unrecoverable_batches,
       coalesce(m.waived_batches, CAST(0 AS DECIMAL(38,0))) AS waived_batches
FROM listed l
LEFT JOIN covered c ON c.sink = l.sink
LEFT JOIN missing m ON m.sink = l.sink
LEFT JOIN oldest o ON o.sink = l.sink AND o.n = 1
ORDER BY l.sink
