// Package lint holds the tests of the tree itself, after Pebble's
// internal/lint: the import rules between covmirror's packages, the layout
// table of docs/design.md, and the size rules (no non-test Go file over
// 400 lines; cmd/covmirror at most 1,500 and any other binary under cmd/
// at most 250, since they only compose). It has no code
// of its own: its tests read the module's import graph with `go list` and
// the files git tracks, and fail, naming the offender, when a rule is
// broken.
//
// # The invariant it owns
//
// The seam stays a seam: the model (coverage) and the tier interface
// (durable) import nothing of covmirror's but each other's below them; the
// checkpointer (mirror) and the recovery planner (recovery) reach no
// concrete durable tier, so any tier that passes durable/durabletest can
// stand behind them; the queries link no Pebble; DuckDB (cgo) is linked
// only where the queries run; and no production file imports a package
// that exists for tests.
package lint
