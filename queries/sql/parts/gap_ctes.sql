-- The CTEs the gaps and summary queries share, after {{selected}} and the
-- query's own merge_input (the rows merged: at least the reference's, with
-- repeated rows gone): merged, those rows merged per destination; the
-- sinks measured; each sink's holes from one window pass over its rows as
-- they are; the sinks' gaps (their holes within the reference's merged
-- ranges); the reference's holes over the span; and gap_rows, every gap.
-- Expanded where a query says {{gap_ctes}}.
running AS (
    -- merge_input is totally ordered by (range_start, range_end) within a
    -- destination (DISTINCT), so both window passes see one order
    SELECT *, max(range_end) OVER (
        PARTITION BY sink, topic, "partition" ORDER BY range_start, range_end
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_to
    FROM merge_input
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
{{sinks}},
sink_rows AS (
    SELECT * FROM selected
    WHERE sink <> $reference AND (CAST($sink AS VARCHAR) IS NULL OR sink = $sink)
),
sink_ends AS (
    -- each sink's partitions and the end of its last row in each: its
    -- trailing holes, and (one row a partition, not every row) whether it
    -- has rows of a partition at all
    SELECT sink, topic, "partition", max(range_end) AS last_end
    FROM sink_rows
    GROUP BY sink, topic, "partition"
),
sink_running AS (
    -- one window pass over each sink's rows as they are: the furthest end
    -- of the rows before each (ties are between identical rows, which
    -- order either way)
    SELECT *, max(range_end) OVER (
        PARTITION BY sink, topic, "partition" ORDER BY range_start, range_end
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_to
    FROM sink_rows
),
sink_holes AS (
    -- what a sink lacks in a partition, as disjoint holes: before its first
    -- row and where a row starts past the furthest end of the rows before
    -- it, after its last row, and all of a partition of the reference it
    -- has no rows in (a sink of the topic that never wrote it)
    SELECT sink, topic, "partition", coalesce(covered_to, 0) AS hole_start, range_start AS hole_end
    FROM sink_running
    WHERE covered_to IS NULL OR range_start > covered_to
    UNION ALL
    SELECT sink, topic, "partition", last_end, CAST(9223372036854775807 AS BIGINT)
    FROM sink_ends
    UNION ALL
    SELECT s.sink, r.topic, r."partition", 0, CAST(9223372036854775807 AS BIGINT)
    FROM (SELECT DISTINCT topic, "partition" FROM merged WHERE sink = $reference) r
    JOIN sinks s ON s.topic = r.topic
    WHERE NOT EXISTS (
        SELECT 1 FROM sink_ends x
        WHERE x.sink = s.sink AND x.topic = r.topic AND x."partition" = r."partition")
),
holes AS (
    -- a sink's gaps: its holes within the reference's merged ranges (which
    -- never touch, so neither do the gaps)
    SELECT h.sink, h.topic, h."partition",
           greatest(h.hole_start, m.range_start) AS gap_start,
           least(h.hole_end, m.range_end) AS gap_end
    FROM sink_holes h JOIN merged m
      ON m.sink = $reference AND m.topic = h.topic AND m."partition" = h."partition"
     AND m.range_start < h.hole_end AND m.range_end > h.hole_start
),
{{span}},
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
    -- the whole span of a partition the reference has no rows of, unless
    -- the reference is misspelt
    SELECT CAST($reference AS VARCHAR), s.topic, s."partition", s.span_start, coalesce(r.first_start, s.span_end)
    FROM span s
    LEFT JOIN reference_ends r ON r.topic = s.topic AND r."partition" = s."partition"
    WHERE (CAST($sink AS VARCHAR) IS NULL OR $sink = $reference)
      AND (SELECT known FROM reference_known)
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
)
