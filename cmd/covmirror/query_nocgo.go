//go:build !cgo

package main

import (
	"context"
	"errors"
)

// runQuery needs DuckDB, which is C++: this binary was built without cgo
// (no C compiler was found, or CGO_ENABLED=0).
func runQuery(ctx context.Context, g *globals, args []string) error {
	return errors.New("query: this covmirror was built without cgo, and the canned queries run on DuckDB: install a C compiler (gcc) and rebuild; `covmirror gaps` and `covmirror plan` work without it")
}
