-- The CTEs the gaps and summary queries share: params, the selected rows,
-- the sinks measured, and per destination the multirange each lacks
-- (sink_gaps: the reference's covered minus the sink's; reference_gaps:
-- the partition's hull minus the reference's covered). Expanded where a
-- query says {{gap_ctes}}.
WITH params AS (
    SELECT CAST($1 AS text) AS reference, CAST($2 AS text) AS sink, CAST($3 AS text) AS topic, CAST($4 AS integer) AS "partition"
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
hull AS (
    SELECT topic, "partition", range_merge(range_agg(covered)) AS hull
    FROM selected
    GROUP BY topic, "partition"
),
reference_gaps AS (
    SELECT p.reference AS sink, h.topic, h."partition", multirange(h.hull) - coalesce(r.covered, '{}'::int8multirange) AS missing
    FROM hull h
    CROSS JOIN params p
    LEFT JOIN selected r ON r.sink = p.reference AND r.topic = h.topic AND r."partition" = h."partition"
    WHERE (p.sink IS NULL OR p.sink = p.reference)
      AND EXISTS (SELECT 1 FROM {{coverage}} a WHERE a.sink = p.reference)
)
