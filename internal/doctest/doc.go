// Package doctest keeps the README and docs/*.md true: every fenced block
// in them runs in a test, or names the test that runs it, so that no page
// drifts from what the code does. It owns no part of the coverage
// invariant; it keeps the pages that state it (raw first, record after the
// sink's acknowledgement) runnable as printed.
//
// A block's fence names its language, and the language says what the test
// does with it:
//
//   - sh: a command block. Run by bash (-e -o pipefail) in an empty
//     directory of its own, with the covmirror binaries on PATH and the
//     repository's examples/ and deploy/ beside it; `go run ./cmd/NAME`
//     runs the built NAME. Commands that need what no test has (a cluster,
//     S3, a sink's database) carry a marker on the line before the fence:
//     `<!-- doctest: flags -->` runs every covmirror command of the block
//     with --help after its arguments (its flags and configuration file
//     are parsed, nothing is contacted), and `<!-- doctest: PKG TestName -->`
//     names the test that runs the block, which must exist and contain each
//     command of the block, or read the page it is on.
//   - go: a `package main` program is built and run inside the module; any
//     other block is a fragment, parsed as Go statements, and each
//     covmirror package's name it uses (coverage.Gaps) must exist.
//   - ini: a configuration file, parsed by covmirror's own parser (a
//     misspelt key fails). One whose first line is `# NAME.conf` is also
//     written as NAME.conf beside the later blocks of its page.
//   - text, yaml, python, sql and a bare fence are shown, not run; a yaml
//     block may be `<!-- doctest: excerpt-of PATH -->`, a verbatim excerpt
//     of a file the tests run. Any other language (bash, console, shell) is
//     refused: command blocks are sh.
//
// Every relative link in those pages must resolve to a file.
package doctest
