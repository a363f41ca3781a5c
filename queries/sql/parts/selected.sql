-- The rows the gaps, summary and lag queries read: topic_rows, those of
-- the selected topic (every partition of it: a sink of the topic that
-- never wrote the selected partition lacks all of it), and selected, those
-- of the selected partition too. Expanded where a query says {{selected}}.
topic_rows AS (
    SELECT sink, topic, "partition", range_start, range_end, recorded_at
    FROM coverage
    WHERE (CAST($topic AS VARCHAR) IS NULL OR topic = $topic)
),
selected AS (
    SELECT * FROM topic_rows
    WHERE (CAST($partition AS INTEGER) IS NULL OR "partition" = $partition)
)
