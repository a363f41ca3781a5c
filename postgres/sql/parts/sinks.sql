-- The sinks measured against the reference, per topic: every sink with
-- rows of the topic, and the sinks named for the topic ($6,
-- params.named_sinks, a JSON array of {"topic", "sink"} objects) in every
-- topic with rows: a topic's own objects when it has any (a NULL sink
-- names none), else those with a NULL topic, the sinks every topic is
-- written to (coverage.SinksFor). Expanded where a query says {{sinks}}.
sinks AS (
    -- from every partition of the topic, not only the selected one: a sink
    -- that never wrote the selected partition lacks all of it
    SELECT DISTINCT t.sink, t.topic FROM topic_rows t CROSS JOIN params p
    WHERE t.sink <> p.reference AND (p.sink IS NULL OR t.sink = p.sink)
    UNION
    -- a named sink without rows of a topic lacks all of it
    SELECT n.sink, t.topic
    FROM params p
    CROSS JOIN LATERAL jsonb_to_recordset(CAST(p.named_sinks AS jsonb)) AS n(topic text, sink text)
    JOIN (SELECT DISTINCT topic FROM topic_rows) t
      ON n.topic = t.topic
      OR (n.topic IS NULL AND NOT EXISTS (
          SELECT 1 FROM jsonb_to_recordset(CAST(p.named_sinks AS jsonb)) AS o(topic text, sink text) WHERE o.topic = t.topic))
    WHERE n.sink IS NOT NULL AND n.sink <> p.reference AND (p.sink IS NULL OR n.sink = p.sink)
)
