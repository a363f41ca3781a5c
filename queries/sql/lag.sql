-- lag: per sink, how far it is behind a reference (raw by default), from the
-- end of each destination: the batches the reference holds past the sink's
-- last covered batch, and the time between the two sides' last checkpoints.
-- Inner gaps are gaps.sql's business; lag is the trailing edge only, which
-- needs no merging (the highest range_end is the same before and after).
--
-- batches_behind is a DECIMAL(38,0) sum: a few destinations near 2^63
-- overflow BIGINT.
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
)
SELECT sink,
       count(*) AS destinations,
       CAST(sum(CASE WHEN batches_behind > 0 THEN 1 ELSE 0 END) AS BIGINT) AS destinations_behind,
       sum(CAST(batches_behind AS DECIMAL(38,0))) AS batches_behind,
       max(batches_behind) AS max_batches_behind,
       max(sink_recorded_at) AS last_recorded_at,
       max(reference_recorded_at) AS reference_last_recorded_at
FROM behind
GROUP BY sink
ORDER BY sink
