// Package faultio injects faults into an iceberg-go warehouse, for tests:
// an io.IO wrapper that fails chosen creates, writes and closes, and a
// catalog.Catalog wrapper whose tables (LoadTable, CreateTable and every
// commit's result) use that IO, so that real iceberg-go writes and commits
// in a real catalog go through it.
//
// The IO also counts the bytes read per path, so a test can show that a
// filtered read skipped what it should (Injector.BytesRead).
//
// Faults are deterministic: a Rule fails the Nth matching operation, or
// each matching operation with a probability drawn from the Injector's
// seed (the same seed and the same sequence of operations fail the same
// operations). A rule matches a path by substring, so one partition's
// files alone fail with Match: PartitionMatch("sink_key", "lake"). A rule
// with AfterSuccess carries the operation out and reports failure anyway:
// a write that landed but whose answer was lost.
//
//	inj := faultio.New(seed, faultio.Rule{Op: faultio.Create, Match: "/data/", Nth: 2})
//	cat := faultio.WrapCatalog(realCatalog, inj)
//	// ... open tables through cat; inj.Events() lists what was injected.
//
// # The invariant it owns
//
// A fault is only ever an error the wrapped operation reports (with or
// without having been carried out); the wrapper never alters bytes, so
// whatever a test reads back was really written. Injected errors wrap
// ErrInjected.
package faultio
