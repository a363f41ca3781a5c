-- summary: per sink, against a reference (raw by default): the batches it
-- covers, how many gaps it has, how many batches they miss, and its oldest
-- gap (the one starting at the lowest batch id). The gaps are gaps.sql's,
-- and the rows are merged first the same way.
--
-- Parameters: $reference (required); $sink, $topic, $partition (NULL matches
-- everything).
WITH selected AS (
    -- DISTINCT: repeated rows go, and what remains is totally ordered by
    -- (range_start, range_end) within a destination, so that both window
    -- passes below see one order (with ties, they need not).
    SELECT DISTINCT sink, topic, "partition", range_start, range_end
    FROM coverage
    WHERE (CAST($topic AS VARCHAR) IS NULL OR topic = $topic)
      AND (CAST($partition AS INTEGER) IS NULL OR "partition" = $partition)
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
    SELECT DISTINCT sink, topic FROM selected
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
gap_rows AS (
    SELECT sink, topic, "partition", gap_start, gap_end FROM holes WHERE gap_start < gap_end
),
covered AS (
    SELECT sink, count(*) AS ranges, CAST(sum(range_end - range_start) AS BIGINT) AS covered_batches
    FROM merged
    WHERE sink <> $reference AND (CAST($sink AS VARCHAR) IS NULL OR sink = $sink)
    GROUP BY sink
),
missing AS (
    SELECT sink, count(*) AS gaps, CAST(sum(gap_end - gap_start) AS BIGINT) AS missing_batches
    FROM gap_rows
    GROUP BY sink
),
oldest AS (
    SELECT sink, topic, "partition", gap_start, gap_end,
           row_number() OVER (PARTITION BY sink ORDER BY gap_start, topic, "partition") AS n
    FROM gap_rows
)
SELECT c.sink, c.ranges, c.covered_batches,
       coalesce(m.gaps, 0) AS gaps, coalesce(m.missing_batches, 0) AS missing_batches,
       o.topic AS oldest_gap_topic, o."partition" AS oldest_gap_partition,
       o.gap_start AS oldest_gap_start, o.gap_end AS oldest_gap_end
FROM covered c
LEFT JOIN missing m ON m.sink = c.sink
LEFT JOIN oldest o ON o.sink = c.sink AND o.n = 1
ORDER BY c.sink
