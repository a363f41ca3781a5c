// Package tier opens covmirror's durable tier from settings: the coverage
// table in raw's catalog (Iceberg), the sink objects under an object URL
// (Object) or the coverage rows in raw's PostgreSQL (Postgres), and the
// coverage table beside it, which with the other two is their queryable
// replica. The CLI and an embedding program (a pod started in-process)
// open the same tier from the same Settings.
//
// The invariant it owns: a writer never checkpoints into a store that
// could drop coverage silently. Before a writer uses an S3 store, Open
// races conditional writes of one version on it (object.CheckStore) and
// refuses a store that lets two of them win, unless
// ObjectSettings.UnsafeStore says the store is trusted. The tier is
// declared (Settings.Kind), never guessed.
//
// A malformed setting is a *SettingsError, which a command line reports
// as a usage mistake; a well-formed one that cannot be opened is any
// other error. ExplainWriteFailure adds the cause a local warehouse gives
// to a failed write into the table.
package tier
