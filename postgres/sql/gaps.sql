-- gaps: the ranges of a reference destination (raw by default) that a sink
-- lacks, for every sink that has rows of the topic, and the reference's own
-- holes as gaps of the reference (sink = the reference), from the lowest to
-- the highest batch any destination of the partition covers (a sink is
-- written only once raw is durable, so raw held every batch a sink holds):
-- a partition only sinks have rows of is one whole hole, unless the
-- reference has no rows at all (a misspelt reference). The same rows as the
-- DuckDB form over the coverage table.
--
-- With multiranges this is a difference: the reference's covered minus the
-- sink's (a sink with no row for the partition lacks all of it), and the
-- partition's hull minus the reference's covered.
--
-- Parameters: reference (required); sink, topic, partition (NULL matches
-- everything).
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
SELECT x.sink, x.topic, x."partition", lower(g) AS "start", upper(g) AS "end"
FROM (SELECT * FROM sink_gaps UNION ALL SELECT * FROM reference_gaps) x
CROSS JOIN LATERAL unnest(x.missing) AS g
ORDER BY x.sink COLLATE "C", x.topic COLLATE "C", x."partition", "start"
