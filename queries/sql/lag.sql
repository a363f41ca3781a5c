-- lag: per sink, how far it is behind a reference (raw by default), from the
-- end of each destination: the batches the reference holds past the sink's
-- last covered batch, and the time between the two sides' last checkpoints.
-- Inner gaps are gaps.sql's business; lag is the trailing edge only, which
-- needs no merging (the highest range_end is the same before and after).
--
-- The reference has a row too where it is behind what it must hold: per
-- partition, the batches of its holes (gaps.sql's, over the hull of every
-- destination's rows and the source's acked extent) past its last covered
-- batch, all of them in a partition it has no rows of. Its
-- reference_last_recorded_at is NULL: it is measured against the source
-- and the sinks, not against itself.
--
-- batches_behind is a DECIMAL(38,0) sum: a few destinations near 2^63
-- overflow BIGINT.
--
-- Relations: coverage and acked_extents, as gaps.sql reads them.
--
-- Parameters: $reference (required); $sink, $topic, $partition (NULL matches
-- everything).
WITH topic_rows AS (
    SELECT sink, topic, "partition", range_start, range_end, recorded_at
    FROM coverage
    WHERE (CAST($topic AS VARCHAR) IS NULL OR topic = $topic)
),
selected AS (
    SELECT * FROM topic_rows
    WHERE (CAST($partition AS INTEGER) IS NULL OR "partition" = $partition)
),
ends AS (
    SELECT sink, topic, "partition", min(range_start) AS first_start, max(range_end) AS last_end,
           max(recorded_at) AS last_recorded_at
    FROM selected
    GROUP BY sink, topic, "partition"
),
sinks AS (
    -- from every partition of the topic: a sink that never wrote the
    -- selected partition is behind by all of it
    SELECT DISTINCT sink, topic FROM topic_rows
    WHERE sink <> $reference AND (CAST($sink AS VARCHAR) IS NULL OR sink = $sink)
),
behind AS (
    SELECT s.sink, r.topic, r."partition", r.last_end AS reference_end,
           r.last_recorded_at AS reference_recorded_at,
           e.last_end AS sink_end, e.last_recorded_at AS sink_recorded_at,
           greatest(r.last_end - coalesce(e.last_end, r.first_start), 0) AS batches_behind
    FROM ends r
    JOIN sinks s ON s.topic = r.topic
    LEFT JOIN ends e ON e.sink = s.sink AND e.topic = r.topic AND e."partition" = r."partition"
    WHERE r.sink = $reference
),
hull AS (
    SELECT topic, "partition", min(first_start) AS hull_start, max(last_end) AS hull_end
    FROM ends
    GROUP BY topic, "partition"
),
extents AS (
    SELECT topic, "partition", range_start AS extent_start, range_end AS extent_end
    FROM acked_extents
    WHERE range_start < range_end
      AND (CAST($topic AS VARCHAR) IS NULL OR topic = $topic)
      AND (CAST($partition AS INTEGER) IS NULL OR "partition" = $partition)
),
reference_tail AS (
    -- per partition, past the reference's last batch (from the start where
    -- it has none): the hull's part [a_start, a_end) and the extent's
    -- [b_start, b_end); the reference has no rows past its last batch
    SELECT p.topic, p."partition", r.last_recorded_at,
           coalesce(r.last_end, h.hull_start) AS a_start, h.hull_end AS a_end,
           CASE WHEN r.last_end > e.extent_start THEN r.last_end ELSE e.extent_start END AS b_start, e.extent_end AS b_end
    FROM (SELECT topic, "partition" FROM hull UNION SELECT topic, "partition" FROM extents) p
    LEFT JOIN hull h ON h.topic = p.topic AND h."partition" = p."partition"
    LEFT JOIN extents e ON e.topic = p.topic AND e."partition" = p."partition"
    LEFT JOIN ends r ON r.sink = $reference AND r.topic = p.topic AND r."partition" = p."partition"
    WHERE (CAST($sink AS VARCHAR) IS NULL OR $sink = $reference)
      AND (EXISTS (SELECT 1 FROM coverage WHERE sink = $reference) OR NOT EXISTS (SELECT 1 FROM coverage))
),
reference_behind AS (
    -- the batches of the union of the two parts: the first's, then the
    -- second's less what they share (in this order no sum passes BIGINT;
    -- each part is absent where there is no hull or no extent)
    SELECT CAST($reference AS VARCHAR) AS sink, topic, "partition", last_recorded_at,
           CASE WHEN a_end > a_start THEN a_end - a_start ELSE 0 END
           + CASE WHEN b_end > b_start THEN (b_end - b_start)
                  - CASE WHEN a_end > a_start AND least(a_end, b_end) > greatest(a_start, b_start)
                         THEN least(a_end, b_end) - greatest(a_start, b_start) ELSE 0 END
                  ELSE 0 END AS batches_behind
    FROM reference_tail
),
measured AS (
    SELECT sink, batches_behind, sink_recorded_at, reference_recorded_at FROM behind
    UNION ALL
    SELECT sink, batches_behind, last_recorded_at, CAST(NULL AS TIMESTAMPTZ) FROM reference_behind
)
SELECT sink,
       count(*) AS destinations,
       CAST(sum(CASE WHEN batches_behind > 0 THEN 1 ELSE 0 END) AS BIGINT) AS destinations_behind,
       sum(CAST(batches_behind AS DECIMAL(38,0))) AS batches_behind,
       max(batches_behind) AS max_batches_behind,
       max(sink_recorded_at) AS last_recorded_at,
       max(reference_recorded_at) AS reference_last_recorded_at
FROM measured
GROUP BY sink
-- the reference only where it is behind
HAVING sink <> $reference OR max(batches_behind) > 0
ORDER BY sink
