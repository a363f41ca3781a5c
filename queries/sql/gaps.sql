-- gaps: the ranges of a reference destination (raw by default) that a sink
-- lacks, inner and trailing, for every sink that has rows of the topic; and
-- the reference's own holes as gaps of the reference (sink = the
-- reference), over its span: per partition, from the lowest to the highest
-- batch any destination covers (a sink is written only once raw is
-- durable, so raw held every batch a sink holds) or the source's acked
-- extent in acked_extents holds (the source is acked only once raw is
-- durable). The span is one range, the hull: an extent apart from the
-- rows makes the stretch between a hole too. A partition only sinks have
-- rows of, or only an extent, is one whole hole, unless the reference has
-- no rows at all in a table that has some (a misspelt reference).
-- `covmirror gaps --json` gives these rows, computed in Go, with a kind each.
--
-- The reference's rows are merged first (see coverage.sql). A sink's rows
-- are not: one window pass over them as they are (overlapping, repeated)
-- finds its holes, where a row starts past the furthest end of the rows
-- before it, plus before its first row and after its last; a sink with no
-- rows at all for a reference partition lacks all of it, with $partition
-- set too. Its gaps are its holes within the reference's merged ranges.
-- Not merging the sinks' rows saves two window passes and an aggregate over
-- the largest part of the table; the join is of holes, not rows, so rows
-- that overlap many reference ranges cost no more than their holes.
--
-- Relations: coverage, and acked_extents (topic, "partition", range_start,
-- range_end): per partition at most one [start, end) the source has acked,
-- empty when none is known. An extent only widens the reference's span;
-- sinks are measured against the reference's rows
-- alone (a sink's share of a reference hole is no gap until the hole is
-- verified and re-recorded).
--
-- Parameters: $reference (the reference sink, required); $sink, $topic,
-- $partition (NULL matches everything).
WITH topic_rows AS (
    SELECT sink, topic, "partition", range_start, range_end
    FROM coverage
    WHERE (CAST($topic AS VARCHAR) IS NULL OR topic = $topic)
),
selected AS (
    SELECT * FROM topic_rows
    WHERE (CAST($partition AS INTEGER) IS NULL OR "partition" = $partition)
),
reference_rows AS (
    -- DISTINCT: repeated rows go, and what remains is totally ordered by
    -- (range_start, range_end) within a partition, so that both window
    -- passes below see one order (with ties, they need not).
    SELECT DISTINCT sink, topic, "partition", range_start, range_end
    FROM selected
    WHERE sink = $reference
),
running AS (
    SELECT *, max(range_end) OVER (
        PARTITION BY topic, "partition" ORDER BY range_start, range_end
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS covered_to
    FROM reference_rows
),
numbered AS (
    SELECT *, sum(CASE WHEN covered_to IS NULL OR range_start > covered_to THEN 1 ELSE 0 END) OVER (
        PARTITION BY topic, "partition" ORDER BY range_start, range_end
        ROWS UNBOUNDED PRECEDING) AS run
    FROM running
),
merged AS (
    -- the reference's merged ranges
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
sink_rows AS (
    SELECT * FROM selected
    WHERE sink <> $reference AND (CAST($sink AS VARCHAR) IS NULL OR sink = $sink)
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
    SELECT sink, topic, "partition", max(range_end), CAST(9223372036854775807 AS BIGINT)
    FROM sink_rows
    GROUP BY sink, topic, "partition"
    UNION ALL
    SELECT s.sink, r.topic, r."partition", 0, CAST(9223372036854775807 AS BIGINT)
    FROM (SELECT DISTINCT topic, "partition" FROM merged) r
    JOIN sinks s ON s.topic = r.topic
    WHERE NOT EXISTS (
        SELECT 1 FROM sink_rows x
        WHERE x.sink = s.sink AND x.topic = r.topic AND x."partition" = r."partition")
),
holes AS (
    -- a sink's gaps: its holes within the reference's merged ranges (which
    -- never touch, so neither do the gaps)
    SELECT h.sink, h.topic, h."partition",
           greatest(h.hole_start, m.range_start) AS gap_start,
           least(h.hole_end, m.range_end) AS gap_end
    FROM sink_holes h JOIN merged m
      ON m.topic = h.topic AND m."partition" = h."partition"
     AND m.range_start < h.hole_end AND m.range_end > h.hole_start
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
)
SELECT sink, topic, "partition", gap_start AS "start", gap_end AS "end"
FROM gap_rows
ORDER BY sink, topic, "partition", "start", "end"
