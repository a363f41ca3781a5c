-- The CTE of the source's acked extents the gaps, summary and lag queries
-- share: those of the selected partitions, from $5 (params.acked_extents,
-- a JSON array of {"topic","partition","start","end"}, start optional),
-- the empty ones dropped. Expanded where a query says {{acked_extents}}.
extents AS (
    SELECT e.topic, e."partition", int8range(coalesce(e."start", 0), e."end") AS extent
    FROM params p
    CROSS JOIN LATERAL jsonb_to_recordset(CAST(p.acked_extents AS jsonb)) AS e(topic text, "partition" integer, "start" bigint, "end" bigint)
    WHERE coalesce(e."start", 0) < e."end"
      AND (p.topic IS NULL OR e.topic = p.topic)
      AND (p."partition" IS NULL OR e."partition" = p."partition")
)
