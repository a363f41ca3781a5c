//go:build !cgo

package main

import (
	"context"
	"errors"
	"io"

	"github.com/covmirror/covmirror/durable"
)

// haveDuckDB: this build runs the canned queries.
const haveDuckDB = false

// runQuery needs DuckDB, which is C++: this binary was built without cgo
// (no C compiler was found, or CGO_ENABLED=0).
func runQuery(ctx context.Context, g *globals, args []string) error {
	return errors.New("query: this covmirror was built without cgo, and the canned queries run on DuckDB: install a C compiler (gcc) and rebuild; `covmirror gaps` and `covmirror plan` work without it")
}

// showGaps is nil without DuckDB: the demo prints the gaps the planner
// computes in Go.
var showGaps func(ctx context.Context, w io.Writer, primary durable.Tier, over string) error
