-- The parameters every query declares, and topic_rows, the destinations
-- of the selected topic (every partition of it: a sink of the topic that
-- never wrote the selected partition lacks all of it). Expanded where a
-- query says {{params}}.
params AS (
    SELECT CAST($1 AS text) AS reference, CAST($2 AS text) AS sink, CAST($3 AS text) AS topic, CAST($4 AS integer) AS "partition",
           CAST($5 AS text) AS acked_extents, CAST($6 AS text) AS named_sinks
),
topic_rows AS (
    SELECT c.sink, c.topic, c."partition", c.covered, c.last_write
    FROM {{coverage}} c CROSS JOIN params p
    WHERE p.topic IS NULL OR c.topic = p.topic
)
