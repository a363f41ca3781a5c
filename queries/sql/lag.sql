-- lag: per sink, how far it is behind a reference (raw by default), from the
-- end of each destination: the batches the reference holds past the sink's
-- last covered batch, and the time between the two sides' last checkpoints.
-- Inner gaps are gaps.sql's business; lag is the trailing edge only, which
-- needs no merging (the highest range_end is the same before and after).
--
-- The reference has a row too where it is behind what it must hold: per
-- partition, the batches of its holes (gaps.sql's, over the hull of every
-- destination's rows and the source's acked extent) past its last covered
-- batch, which are the hull's stretch from there; all of the hull in a
-- partition it has no rows of. Its
-- reference_last_recorded_at is NULL: it is measured against the source
-- and the sinks, not against itself.
--
-- batches_behind is a DECIMAL(38,0) sum: a few destinations near 2^63
-- overflow BIGINT.
--
-- Relations: coverage, acked_extents and named_sinks, as gaps.sql reads them.
--
-- Parameters: $reference (required); $sink, $topic, $partition (NULL matches
-- everything).
--
-- The shared CTEs are in parts/, expanded where it says {{name}}.
WITH {{selected}},
ends AS (
    SELECT sink, topic, "partition", min(range_start) AS first_start, max(range_end) AS last_end,
           max(recorded_at) AS last_recorded_at
    FROM selected
    GROUP BY sink, topic, "partition"
),
{{sinks}},
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
{{span}},
reference_behind AS (
    -- the reference's holes past its last batch are the span's stretch
    -- from there (the span holds its rows, so that is never negative), or
    -- all of the span in a partition it has no rows of; not where it is
    -- misspelt (no rows in a table that has some)
    SELECT CAST($reference AS VARCHAR) AS sink, s.topic, s."partition", r.last_recorded_at,
           s.span_end - coalesce(r.last_end, s.span_start) AS batches_behind
    FROM span s
    LEFT JOIN ends r ON r.sink = $reference AND r.topic = s.topic AND r."partition" = s."partition"
    WHERE (CAST($sink AS VARCHAR) IS NULL OR $sink = $reference)
      AND (SELECT known FROM reference_known)
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
