-- The sinks measured against the reference, per topic: every sink with
-- rows of the topic, and the sinks named as written to every topic
-- (named_sinks) in every topic with rows. Expanded where a query says
-- {{sinks}}.
sinks AS (
    -- from every partition of the topic, not only the selected one: a sink
    -- that never wrote the selected partition lacks all of it
    SELECT DISTINCT sink, topic FROM topic_rows
    WHERE sink <> $reference AND (CAST($sink AS VARCHAR) IS NULL OR sink = $sink)
    UNION
    -- a named sink without rows of a topic lacks all of it
    SELECT n.sink, t.topic
    FROM named_sinks n CROSS JOIN (SELECT DISTINCT topic FROM topic_rows) t
    WHERE n.sink <> $reference AND (CAST($sink AS VARCHAR) IS NULL OR n.sink = $sink)
)
