-- coverage: the merged covered ranges of every destination.
--
-- The table is a log of ranges: rows may overlap, touch or repeat (two owners
-- checkpointing the same batches during a rebalance). Sorted by range_start,
-- a row starts a new merged range only where it begins after every earlier
-- row of its destination has ended (a running max of range_end); rows that
-- overlap or touch join the range before them. A hole stays a hole.
--
-- Parameters (NULL matches everything): $sink, $topic, $partition.
WITH selected AS (
    -- DISTINCT: repeated rows go, and what remains is totally ordered by
    -- (range_start, range_end) within a destination, so that both window
    -- passes below see one order (with ties, they need not).
    SELECT DISTINCT sink, topic, "partition", range_start, range_end
    FROM coverage
    WHERE (CAST($sink AS VARCHAR) IS NULL OR sink = $sink)
      AND (CAST($topic AS VARCHAR) IS NULL OR topic = $topic)
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
)
SELECT sink, topic, "partition", min(range_start) AS "start", max(range_end) AS "end"
FROM numbered
GROUP BY sink, topic, "partition", run
ORDER BY sink, topic, "partition", "start"
