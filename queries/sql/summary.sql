-- summary: per sink, against a reference (raw by default): the batches it
-- covers, how many gaps it has, how many batches they miss, and its oldest
-- gap (the one starting at the lowest batch id). The gaps are gaps.sql's,
-- the reference's own holes included (over the hull of every batch some
-- destination of the partition covers and of the source's acked extent in
-- acked_extents): the reference has a row too. The rows are merged first
-- the same way. Batch totals are DECIMAL(38,0): a few ranges near 2^63
-- overflow BIGINT, in DuckDB, Trino and Spark alike.
--
-- Relations: coverage and acked_extents, as gaps.sql reads them.
--
-- Parameters: $reference (required); $sink, $topic, $partition (NULL matches
-- everything).
WITH topic_rows AS (
    -- DISTINCT: repeated rows go, and what remains is totally ordered by
    -- (range_start, range_end) within a destination, so that both window
    -- passes below see one order (with ties, they need not).
    SELECT DISTINCT sink, topic, "partition", range_start, range_end
    FROM coverage
    WHERE (CAST($topic AS VARCHAR) IS NULL OR topic = $topic)
),
selected AS (
    SELECT * FROM topic_rows
    WHERE (CAST($partition AS INTEGER) IS NULL OR "partition" = $partition)
),
running AS (
    SELECT *, max(range_end) OVER (
        PARTITION BY sink, topic, "partition" ORDER BY range_start, range_end
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_to
    FROM selected
),
numbered AS (
    SELECT *, sum(CASE WHEN covered_to IS NULL OR range_start > covered_to THEN 1 ELSE 0 END) OVER (
        PARTITION BY sink, topic, "partition" ORDER BY range_start, range_end
        ROWS UNBOUNDED PRECEDING) AS run
    FROM running
),
merged AS (
    SELECT sink, topic, "partition", min(range_start) AS range_start, max(range_end) AS range_end
    FROM numbered
    GROUP BY sink, topic, "partition", run
),
sinks AS (
    -- from every partition of the topic, not only the selected one: a sink
    -- that never wrote the selected partition lacks all of it
    SELECT DISTINCT sink, topic FROM topic_rows
    WHERE sink <> $reference AND (CAST($sink AS VARCHAR) IS NULL OR sink = $sink)
),
wanted AS (
    SELECT s.sink, r.topic, r."partition", r.range_start AS ref_start, r.range_end AS ref_end
    FROM merged r JOIN sinks s ON s.topic = r.topic
    WHERE r.sink = $reference
),
clipped AS (
    SELECT w.sink, w.topic, w."partition", w.ref_start, w.ref_end,
           greatest(m.range_start, w.ref_start) AS cov_start,
           least(m.range_end, w.ref_end) AS cov_end
    FROM wanted w JOIN merged m
      ON m.sink = w.sink AND m.topic = w.topic AND m."partition" = w."partition"
     AND m.range_start < w.ref_end AND m.range_end > w.ref_start
),
ends AS (
    SELECT sink, topic, "partition", ref_start, ref_end, cov_start, cov_end FROM clipped
    UNION ALL
    -- a sentinel at the end of each reference range: the hole before it is
    -- the trailing gap, or the whole range where nothing covers it
    SELECT sink, topic, "partition", ref_start, ref_end, ref_end, ref_end FROM wanted
),
holes AS (
    -- before each covered stretch and before the sentinel: from the end of
    -- the stretch before, or from the start of the reference range
    SELECT sink, topic, "partition",
           coalesce(lag(cov_end) OVER (PARTITION BY sink, topic, "partition", ref_start ORDER BY cov_start), ref_start) AS gap_start,
           cov_start AS gap_end
    FROM ends
),
span AS (
    -- per partition, where the reference's holes are looked for: the hull
    -- of every destination's rows, the reference's and the sinks' (a sink
    -- is written only once raw is durable, so raw held every batch of it),
    -- and of the source's acked extent of the partition (the source is
    -- acked only once raw is durable): raw held every batch between
    SELECT topic, "partition", min(range_start) AS span_start, max(range_end) AS span_end
    FROM (SELECT topic, "partition", range_start, range_end FROM selected
          UNION ALL
          SELECT topic, "partition", range_start, range_end FROM acked_extents
          WHERE range_start < range_end
            AND (CAST($topic AS VARCHAR) IS NULL OR topic = $topic)
            AND (CAST($partition AS INTEGER) IS NULL OR "partition" = $partition)) x
    GROUP BY topic, "partition"
),
reference_ends AS (
    SELECT topic, "partition", min(range_start) AS first_start, max(range_end) AS last_end
    FROM selected
    WHERE sink = $reference
    GROUP BY topic, "partition"
),
reference_holes AS (
    -- the reference's own holes over the span: nothing says raw holds them,
    -- so every sink's gap there is hidden until they are verified; they are
    -- gaps of the reference itself. Inner: between its merged ranges.
    SELECT sink, topic, "partition",
           lag(range_end) OVER (PARTITION BY topic, "partition" ORDER BY range_start) AS gap_start,
           range_start AS gap_end
    FROM merged
    WHERE sink = $reference AND (CAST($sink AS VARCHAR) IS NULL OR sink = $sink)
    UNION ALL
    -- leading: from the span's start to the reference's first batch; or
    -- the whole span of a partition the reference has no rows of, provided
    -- it has rows somewhere or the table has none (else the reference is
    -- misspelt: no holes)
    SELECT CAST($reference AS VARCHAR), s.topic, s."partition", s.span_start, coalesce(r.first_start, s.span_end)
    FROM span s
    LEFT JOIN reference_ends r ON r.topic = s.topic AND r."partition" = s."partition"
    WHERE (CAST($sink AS VARCHAR) IS NULL OR $sink = $reference)
      AND (EXISTS (SELECT 1 FROM coverage WHERE sink = $reference) OR NOT EXISTS (SELECT 1 FROM coverage))
    UNION ALL
    -- trailing: from the reference's last batch to the span's end
    SELECT CAST($reference AS VARCHAR), s.topic, s."partition", r.last_end, s.span_end
    FROM span s
    JOIN reference_ends r ON r.topic = s.topic AND r."partition" = s."partition"
    WHERE (CAST($sink AS VARCHAR) IS NULL OR $sink = $reference)
),
gap_rows AS (
    SELECT sink, topic, "partition", gap_start, gap_end FROM holes WHERE gap_start < gap_end
    UNION ALL
    SELECT sink, topic, "partition", gap_start, gap_end FROM reference_holes WHERE gap_start < gap_end
),
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
    SELECT sink, count(*) AS gaps, sum(CAST(gap_end - gap_start AS DECIMAL(38,0))) AS missing_batches
    FROM gap_rows
    GROUP BY sink
),
oldest AS (
    SELECT sink, topic, "partition", gap_start, gap_end,
           row_number() OVER (PARTITION BY sink ORDER BY gap_start, topic, "partition") AS n
    FROM gap_rows
)
SELECT l.sink, coalesce(c.ranges, 0) AS ranges, coalesce(c.covered_batches, CAST(0 AS DECIMAL(38,0))) AS covered_batches,
       coalesce(m.gaps, 0) AS gaps, coalesce(m.missing_batches, CAST(0 AS DECIMAL(38,0))) AS missing_batches,
       o.topic AS oldest_gap_topic, o."partition" AS oldest_gap_partition,
       o.gap_start AS oldest_gap_start, o.gap_end AS oldest_gap_end
FROM listed l
LEFT JOIN covered c ON c.sink = l.sink
LEFT JOIN missing m ON m.sink = l.sink
LEFT JOIN oldest o ON o.sink = l.sink AND o.n = 1
ORDER BY l.sink
