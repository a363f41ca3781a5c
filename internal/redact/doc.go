// Package redact is the one redaction every covmirror surface applies to
// what a server or a user gave before printing it (errors, logs, CLI
// output): the Go client, inspect --url, reconcile's configuration and
// HTTP checker. The Python client (examples/python) has its twin,
// _redact, with the same rules.
//
// The invariant it owns: no credential reaches an output, whole or in
// part. Redaction runs on the whole text before any truncation, and a text
// that was cut short (by a read bound) loses a tail that could be the start
// of a credential, so that no cut ever leaves a credential's prefix.
// A credential told only by where it was configured (a catalog's
// header.* value) is remembered (Remember) for every later redaction of
// the process.
package redact
