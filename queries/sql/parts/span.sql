-- Where the reference's holes are looked for, per partition (span), and
-- whether they are looked for at all (reference_known). Expanded where a
-- query says {{span}}.
span AS (
    -- the hull of every destination's rows, the reference's and the sinks'
    -- (a sink is written only once raw is durable, so raw held every batch
    -- of it), and of the source's acked extent of the partition (the
    -- source is acked only once raw is durable): raw held every batch
    -- between
    SELECT topic, "partition", min(range_start) AS span_start, max(range_end) AS span_end
    FROM (SELECT topic, "partition", range_start, range_end FROM selected
          UNION ALL
          SELECT topic, "partition", range_start, range_end FROM acked_extents
          WHERE range_start < range_end
            AND (CAST($topic AS VARCHAR) IS NULL OR topic = $topic)
            AND (CAST($partition AS INTEGER) IS NULL OR "partition" = $partition)) x
    GROUP BY topic, "partition"
),
reference_known AS (
    -- the reference has rows, or the table has none (only extents): else
    -- it is misspelt, and its holes would be every partition
    SELECT EXISTS (SELECT 1 FROM coverage WHERE sink = $reference) OR NOT EXISTS (SELECT 1 FROM coverage) AS known
)
