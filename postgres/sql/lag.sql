-- lag: per sink, how far it is behind a reference (raw by default), from the
-- end of each destination: the batches the reference holds past the sink's
-- last covered batch, and the time between the two sides' last writes.
-- Inner gaps are the gaps query's business; lag is the trailing edge only.
--
-- Parameters: reference (required); sink, topic, partition (NULL matches
-- everything).
WITH params AS (
    SELECT CAST($1 AS text) AS reference, CAST($2 AS text) AS sink, CAST($3 AS text) AS topic, CAST($4 AS integer) AS "partition"
),
topic_rows AS (
    SELECT c.sink, c.topic, c."partition", c.covered, c.last_write
    FROM {{coverage}} c CROSS JOIN params p
    WHERE p.topic IS NULL OR c.topic = p.topic
),
ends AS (
    SELECT t.sink, t.topic, t."partition", lower(t.covered) AS first_start, upper(t.covered) AS last_end,
           t.last_write AS last_recorded_at
    FROM topic_rows t CROSS JOIN params p
    WHERE p."partition" IS NULL OR t."partition" = p."partition"
),
sinks AS (
    -- from every partition of the topic: a sink that never wrote the
    -- selected partition is behind by all of it
    SELECT DISTINCT t.sink, t.topic FROM topic_rows t CROSS JOIN params p
    WHERE t.sink <> p.reference AND (p.sink IS NULL OR t.sink = p.sink)
),
behind AS (
    SELECT s.sink, r.topic, r."partition", r.last_end AS reference_end,
           r.last_recorded_at AS reference_recorded_at,
           e.last_end AS sink_end, e.last_recorded_at AS sink_recorded_at,
           greatest(r.last_end - coalesce(e.last_end, r.first_start), 0) AS batches_behind
    FROM ends r
    JOIN params p ON r.sink = p.reference
    JOIN sinks s ON s.topic = r.topic
    LEFT JOIN ends e ON e.sink = s.sink AND e.topic = r.topic AND e."partition" = r."partition"
)
SELECT sink,
       count(*) AS destinations,
       CAST(sum(CASE WHEN batches_behind > 0 THEN 1 ELSE 0 END) AS bigint) AS destinations_behind,
       sum(CAST(batches_behind AS numeric)) AS batches_behind,
       max(batches_behind) AS max_batches_behind,
       max(sink_recorded_at) AS last_recorded_at,
       max(reference_recorded_at) AS reference_last_recorded_at
FROM behind
GROUP BY sink
ORDER BY sink COLLATE "C"
