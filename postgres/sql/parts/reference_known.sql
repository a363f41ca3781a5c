-- Whether the reference's holes are looked for at all: the reference has
-- rows, or the table has none (only extents); else it is misspelt, and its
-- holes would be every partition. Expanded where a query says
-- {{reference_known}}.
reference_known AS (
    SELECT EXISTS (SELECT 1 FROM {{coverage}} a CROSS JOIN params p WHERE a.sink = p.reference)
        OR NOT EXISTS (SELECT 1 FROM {{coverage}} a) AS known
)
