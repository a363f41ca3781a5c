// Package lazysubstrait defers the loading of Substrait's default extension
// definitions from package initialization to the first command that reads
// an Iceberg table, so that a command which never does (covmirror version,
// record, inspect) does not pay for it.
//
// iceberg-go's table/substrait package, linked by every user of
// iceberg-go's table package, loads substrait-go's default collection (about
// 20 YAML files of function definitions) in a package-level variable's
// initializer: about 75 ms of CPU and 32 MB of allocations in every process
// of the binary, before main runs. This package, initialized before it (it
// imports only substrait-go's extensions package, and Go initializes the
// first ready package in import-path order), swaps substrait-go's loader of
// the default collection for one that hands out an empty collection, and
// Load fills that same collection later, exactly as substrait-go would
// have, file by file in the same order.
//
// # The invariant it owns
//
// A process that linked this package never converts an expression with a
// partial collection silently: until Load has run, a conversion that needs
// a default function fails with Substrait's own "not found" error, and
// every covmirror command except those that never read a table calls Load
// before it runs (cmd/covmirror). Only the covmirror binary imports this
// package (internal/lint checks it), so a library user of covmirror's
// packages keeps iceberg-go's eager loading.
package lazysubstrait
