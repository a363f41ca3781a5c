-- The sinks measured against the reference, per topic: every sink with
-- rows of the topic, and the sinks named for the topic (named_sinks) in
-- every topic with rows: a topic's own rows of named_sinks when it has any
-- (a row with a NULL sink names none), else the rows with a NULL topic,
-- the sinks every topic is written to (coverage.SinksFor). Expanded where
-- a query says {{sinks}}.
sinks AS (
    -- from every partition of the topic, not only the selected one: a sink
    -- that never wrote the selected partition lacks all of it
    SELECT DISTINCT sink, topic FROM topic_rows
    WHERE sink <> $reference AND (CAST($sink AS VARCHAR) IS NULL OR sink = $sink)
    UNION
    -- a named sink without rows of a topic lacks all of it
    SELECT n.sink, t.topic
    FROM (SELECT DISTINCT topic FROM topic_rows) t
    JOIN named_sinks n
      ON n.topic = t.topic
      OR (n.topic IS NULL AND NOT EXISTS (SELECT 1 FROM named_sinks o WHERE o.topic = t.topic))
    WHERE n.sink IS NOT NULL AND n.sink <> $reference AND (CAST($sink AS VARCHAR) IS NULL OR n.sink = $sink)
)
