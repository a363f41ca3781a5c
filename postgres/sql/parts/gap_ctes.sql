-- The CTEs the gaps and summary queries share: params, the selected rows,
-- the sinks measured, and per destination the multirange each lacks
-- (sink_gaps: the reference's covered minus the sink's; reference_gaps:
-- the hull of the partition's rows and its acked extent, minus the
-- reference's covered). Expanded where a query says {{gap_ctes}}.
WITH params AS (
    SELECT CAST($1 AS text) AS reference, CAST($2 AS text) AS sink, CAST($3 AS text) AS topic, CAST($4 AS integer) AS "partition",
           CAST($5 AS text) AS acked_extents
),
topic_rows AS (
    SELECT c.sink, c.topic, c."partition", c.covered
    FROM {{coverage}} c CROSS JOIN params p
    WHERE p.topic IS NULL OR c.topic = p.topic
),
selected AS (
    SELECT t.* FROM topic_rows t CROSS JOIN params p
    WHERE p."partition" IS NULL OR t."partition" = p."partition"
),
sinks AS (
    -- from every partition of the topic, not only the selected one: a sink
    -- that never wrote the selected partition lacks all of it
    SELECT DISTINCT t.sink, t.topic FROM topic_rows t CROSS JOIN params p
    WHERE t.sink <> p.reference AND (p.sink IS NULL OR t.sink = p.sink)
),
sink_gaps AS (
    SELECT s.sink, r.topic, r."partition", r.covered - coalesce(c.covered, '{}'::int8multirange) AS missing
    FROM selected r
    JOIN params p ON r.sink = p.reference
    JOIN sinks s ON s.topic = r.topic
    LEFT JOIN selected c ON c.sink = s.sink AND c.topic = r.topic AND c."partition" = r."partition"
),
{{acked_extents}},
spans AS (
    -- where the reference's holes are looked for: the hull of every
    -- destination's rows (a sink is written only once raw is durable) and
    -- of the partition's acked extent (the source is acked only once raw
    -- is durable): raw held every batch between
    SELECT topic, "partition", range_merge(range_agg(r)) AS span
    FROM (SELECT topic, "partition", covered AS r FROM selected
          UNION ALL
          SELECT topic, "partition", multirange(extent) FROM extents) x
    GROUP BY topic, "partition"
),
reference_gaps AS (
    -- the reference has rows, or the table has none (only extents): else
    -- it is misspelt, and its holes would be every partition
    SELECT p.reference AS sink, s.topic, s."partition", multirange(s.span) - coalesce(r.covered, '{}'::int8multirange) AS missing
    FROM spans s
    CROSS JOIN params p
    LEFT JOIN selected r ON r.sink = p.reference AND r.topic = s.topic AND r."partition" = s."partition"
    WHERE (p.sink IS NULL OR p.sink = p.reference)
      AND (EXISTS (SELECT 1 FROM {{coverage}} a WHERE a.sink = p.reference) OR NOT EXISTS (SELECT 1 FROM {{coverage}} a))
)
