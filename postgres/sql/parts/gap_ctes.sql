-- The CTEs the gaps and summary queries share: params and the rows of the
-- selected topic ({{params}}), the selected rows, the sinks measured
-- ({{sinks}}), and per destination the multirange each lacks
-- (sink_gaps: the reference's covered minus the sink's; reference_gaps:
-- the hull of the partition's rows and its acked extent, minus the
-- reference's covered). Expanded where a query says {{gap_ctes}}.
WITH {{params}},
selected AS (
    SELECT t.* FROM topic_rows t CROSS JOIN params p
    WHERE p."partition" IS NULL OR t."partition" = p."partition"
),
{{sinks}},
sink_gaps AS (
    SELECT s.sink, r.topic, r."partition", r.covered - coalesce(c.covered, '{}'::int8multirange) AS missing
    FROM selected r
    JOIN params p ON r.sink = p.reference
    JOIN sinks s ON s.topic = r.topic
    LEFT JOIN selected c ON c.sink = s.sink AND c.topic = r.topic AND c."partition" = r."partition"
),
{{acked_extents}},
{{reference_known}},
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
    -- over the span, unless the reference is misspelt (reference_known)
    SELECT p.reference AS sink, s.topic, s."partition", multirange(s.span) - coalesce(r.covered, '{}'::int8multirange) AS missing
    FROM spans s
    CROSS JOIN params p
    LEFT JOIN selected r ON r.sink = p.reference AND r.topic = s.topic AND r."partition" = s."partition"
    WHERE (p.sink IS NULL OR p.sink = p.reference)
      AND (SELECT known FROM reference_known)
)
