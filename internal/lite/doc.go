// Package lite is what covmirror and covmirror-lite share: the commands a
// pipeline may run once per batch (record, inspect, version), their
// settings, and the command-line plumbing both binaries parse with.
//
// It links the local tier and nothing of the durable tier (no iceberg-go,
// Arrow, DuckDB or AWS SDK; internal/lint enforces it), so that
// covmirror-lite starts in a few milliseconds of CPU and a fraction of
// covmirror's memory, while saying exactly what covmirror says: one
// implementation of each command, two binaries.
//
// The invariant it keeps: record writes a range into the local tier only
// after every argument was checked (the caller's assertion that the sink
// acknowledged it is the command itself), and reports success only once
// the local tier has committed and closed, so a printed "recorded" line
// survives the process; inspect only reads.
package lite
