-- The sinks measured against the reference, per topic: every sink with
-- rows of the topic, and the sinks named as written to every topic ($6,
-- params.named_sinks, a JSON array of names) in every topic with rows.
-- Expanded where a query says {{sinks}}.
sinks AS (
    -- from every partition of the topic, not only the selected one: a sink
    -- that never wrote the selected partition lacks all of it
    SELECT DISTINCT t.sink, t.topic FROM topic_rows t CROSS JOIN params p
    WHERE t.sink <> p.reference AND (p.sink IS NULL OR t.sink = p.sink)
    UNION
    -- a named sink without rows of a topic lacks all of it
    SELECT n.sink, t.topic
    FROM params p
    CROSS JOIN LATERAL jsonb_array_elements_text(CAST(p.named_sinks AS jsonb)) AS n(sink)
    CROSS JOIN (SELECT DISTINCT topic FROM topic_rows) t
    WHERE n.sink <> p.reference AND (p.sink IS NULL OR n.sink = p.sink)
)
