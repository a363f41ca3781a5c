-- lag: per sink, how far it is behind a reference (raw by default), from the
-- end of each destination: the batches the reference holds past the sink's
-- last covered batch, and the time between the two sides' last writes.
-- Inner gaps are the gaps query's business; lag is the trailing edge only.
-- The reference has a row too where it is behind what it must hold (the
-- hull of every destination's rows and the source's acked extent), as the
-- DuckDB form says; its reference_last_recorded_at is NULL.
--
-- Parameters: reference (required); sink, topic, partition (NULL matches
-- everything); acked extents and named sinks (JSON text, '[]' for none),
-- as the gaps query's.
WITH {{params}},
ends AS (
    SELECT t.sink, t.topic, t."partition", lower(t.covered) AS first_start, upper(t.covered) AS last_end,
           t.last_write AS last_recorded_at
    FROM topic_rows t CROSS JOIN params p
    WHERE p."partition" IS NULL OR t."partition" = p."partition"
),
{{sinks}},
behind AS (
    SELECT s.sink, r.topic, r."partition", r.last_end AS reference_end,
           r.last_recorded_at AS reference_recorded_at,
           e.last_end AS sink_end, e.last_recorded_at AS sink_recorded_at,
           greatest(r.last_end - coalesce(e.last_end, r.first_start), 0) AS batches_behind
    FROM ends r
    JOIN params p ON r.sink = p.reference
    JOIN sinks s ON s.topic = r.topic
    LEFT JOIN ends e ON e.sink = s.sink AND e.topic = r.topic AND e."partition" = r."partition"
),
{{acked_extents}},
{{reference_known}},
spans AS (
    -- per partition, what the reference must hold: the hull of every
    -- destination's rows and of the source's acked extent
    SELECT topic, "partition", min(first_start) AS span_start, max(last_end) AS span_end
    FROM (SELECT topic, "partition", first_start, last_end FROM ends
          UNION ALL
          SELECT topic, "partition", lower(extent), upper(extent) FROM extents) x
    GROUP BY topic, "partition"
),
reference_behind AS (
    -- the reference's holes past its last batch are the span's stretch
    -- from there (the span holds its rows), or all of the span in a
    -- partition it has no rows of
    SELECT p.reference AS sink, s.topic, s."partition", r.last_recorded_at,
           s.span_end - coalesce(r.last_end, s.span_start) AS batches_behind
    FROM spans s
    CROSS JOIN params p
    LEFT JOIN ends r ON r.sink = p.reference AND r.topic = s.topic AND r."partition" = s."partition"
    WHERE (p.sink IS NULL OR p.sink = p.reference)
      AND (SELECT known FROM reference_known)
),
measured AS (
    SELECT sink, batches_behind, sink_recorded_at, reference_recorded_at FROM behind
    UNION ALL
    SELECT sink, batches_behind, last_recorded_at, CAST(NULL AS timestamptz) FROM reference_behind
)
SELECT m.sink,
       count(*) AS destinations,
       CAST(sum(CASE WHEN m.batches_behind > 0 THEN 1 ELSE 0 END) AS bigint) AS destinations_behind,
       sum(CAST(m.batches_behind AS numeric)) AS batches_behind,
       max(m.batches_behind) AS max_batches_behind,
       max(m.sink_recorded_at) AS last_recorded_at,
       max(m.reference_recorded_at) AS reference_last_recorded_at
FROM measured m
CROSS JOIN params p
GROUP BY m.sink, p.reference
-- the reference only where it is behind
HAVING m.sink <> p.reference OR max(m.batches_behind) > 0
ORDER BY m.sink COLLATE "C"
