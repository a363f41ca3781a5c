package iceberg

import (
	"errors"
)

var (
	// ErrIncompatibleTable: the named table exists with a schema covmirror
	// cannot use. It is never altered: use another table name, or fix or
	// drop the table.
	ErrIncompatibleTable = errors.New("table has an incompatible schema")

	// ErrCommitTimeout: a commit kept conflicting or failing until
	// Options.CommitTimeout passed. Nothing is lost: the local tier keeps
	// the ranges pending and the next checkpoint carries them.
	ErrCommitTimeout = errors.New("commit did not land before the deadline")

	// ErrDeleteFiles: the snapshot has delete files (row-level deletes some
	// other engine wrote). covmirror never writes them, and its readers that
	// work on the data files alone (compaction, the canned queries) cannot
	// apply them: they refuse rather than count deleted rows as covered.
	ErrDeleteFiles = errors.New("snapshot has delete files")

	// ErrUnverifiedWrite: the data files written for a commit do not hold
	// the rows built for it (a partition's file missing or short, a file
	// absent or of another size than its metadata says). Nothing was
	// committed; the ranges stay pending and a later attempt writes anew.
	ErrUnverifiedWrite = errors.New("written data files do not match the rows written")

	// ErrMergeUnverified: a merge of manifests (MergeManifests) committed a
	// snapshot that does not list exactly the data files of the snapshot
	// before it, or whose listing could not be read back to check. The
	// error names what it found; no data file was deleted.
	ErrMergeUnverified = errors.New("a merge of manifests is not verified to keep every data file")
)
