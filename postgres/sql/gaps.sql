-- gaps: the ranges of a reference destination (raw by default) that a sink
-- lacks, for every sink that has rows of the topic or is named in $6, and
-- the reference's own holes as gaps of the reference (sink = the
-- reference), from the lowest to the highest batch any destination of the
-- partition covers (a sink is written only once raw is durable, so raw
-- held every batch a sink holds) or the source's acked extent of the
-- partition holds, where $5 gives one: the hull of both, so an extent
-- apart from the rows makes the stretch between a hole too. A partition
-- only sinks have rows of, or only an extent, is one whole hole, unless
-- the reference has no rows at all in a table that has some (a misspelt
-- reference). The same rows as the DuckDB form over the coverage table.
--
-- With multiranges this is a difference: the reference's covered minus the
-- sink's (a sink with no row for the partition lacks all of it), and the
-- hull of the partition's rows and its extent, minus the reference's
-- covered.
--
-- Parameters: reference (required); sink, topic, partition (NULL matches
-- everything); acked extents ($5: JSON text, '[]' for none); named sinks
-- ($6: a JSON array of {"topic", "sink"} objects, the sinks written to
-- besides those with rows: a NULL topic for every topic without objects
-- of its own, a NULL sink for a topic with none named; '[]' for none).
--
-- Each gap comes with its kind: replay, verify-reference (a hole of the
-- reference), or the gap state holding it out of the plan (refused,
-- unrecoverable, waived) and event_id, the deciding event (NULL for the
-- first two), read from the gap_states table (parts/held.sql): a gap in a
-- state is still listed, split where the decisions about it differ.
--
-- The shared CTEs are in parts/, expanded where it says {{name}}.
{{gap_ctes}},
{{held}}
SELECT x.sink, x.topic, x."partition", lower(g) AS "start", upper(g) AS "end", x.kind, x.event_id
FROM classified x
CROSS JOIN LATERAL unnest(x.missing) AS g
ORDER BY x.sink COLLATE "C", x.topic COLLATE "C", x."partition", "start"
