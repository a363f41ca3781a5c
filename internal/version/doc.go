// Package version says which covmirror a process is: its version, the
// commit it was built from, when that commit was made, and the Go
// toolchain, from the values a release build sets with -ldflags -X (make
// release) and else from the build information Go stamps into every
// binary (runtime/debug). Every binary prints it (version, --version), the
// metrics carry it (package versionmetric's covmirror_build_info) and the
// durable tiers stamp each checkpoint with it where they have room.
//
// The invariant it owns: a version is never made up. A value neither the
// release build nor the build information gives is "unknown", and a build
// from a work tree with no version is "(devel)", so a checkpoint's stamp
// may be vague but never names a release that did not write it.
//
// A program that embeds covmirror as a library gets covmirror's module
// version from its dependency list, not the program's own.
package version
