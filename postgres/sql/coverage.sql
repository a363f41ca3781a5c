-- coverage: the merged covered ranges of every destination. A row's
-- covered multirange is merged by construction: each of its ranges is one
-- row here.
--
-- Parameters (NULL matches everything): sink, topic, partition; reference,
-- the acked extents and the named sinks are unused.
WITH params AS (
    SELECT CAST($1 AS text) AS reference, CAST($2 AS text) AS sink, CAST($3 AS text) AS topic, CAST($4 AS integer) AS "partition",
           CAST($5 AS text) AS acked_extents, CAST($6 AS text) AS named_sinks
)
SELECT c.sink, c.topic, c."partition", lower(r) AS "start", upper(r) AS "end"
FROM {{coverage}} c
CROSS JOIN params p
CROSS JOIN LATERAL unnest(c.covered) AS r
WHERE (p.sink IS NULL OR c.sink = p.sink)
  AND (p.topic IS NULL OR c.topic = p.topic)
  AND (p."partition" IS NULL OR c."partition" = p."partition")
ORDER BY c.sink COLLATE "C", c.topic COLLATE "C", c."partition", "start"
