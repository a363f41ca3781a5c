-- files: the table's data files per sink partition, how many of them are
-- small (candidates for compaction), and the snapshots the table keeps.
--
-- Relations: coverage_files (sink, file_path, record_count,
-- file_size_in_bytes), one row per data file of the current snapshot, and
-- coverage_snapshots (snapshot_id, committed_at, operation), one row per
-- snapshot in the metadata.
--
-- Parameters: $small_file_bytes (required); $sink (NULL matches everything).
SELECT sink,
       count(*) AS data_files,
       CAST(sum(CASE WHEN file_size_in_bytes < $small_file_bytes THEN 1 ELSE 0 END) AS BIGINT) AS small_files,
       CAST(sum(record_count) AS BIGINT) AS records,
       CAST(sum(file_size_in_bytes) AS BIGINT) AS bytes,
       (SELECT count(*) FROM coverage_snapshots) AS snapshots
FROM coverage_files
WHERE CAST($sink AS VARCHAR) IS NULL OR sink = $sink
GROUP BY sink
ORDER BY sink
