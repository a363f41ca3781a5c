//go:build !cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// haveDuckDB: this build runs the canned queries.
const haveDuckDB = false

// runQuery needs DuckDB, which is C++: this binary was built without cgo
// (no C compiler was found, or CGO_ENABLED=0).
func runQuery(ctx context.Context, g *globals, args []string) error {
	return errors.New("query: this covmirror was built without cgo, and the canned queries run on DuckDB: install a C compiler (gcc) and rebuild; `covmirror gaps` and `covmirror plan` work without it")
}

// showGaps prints the gaps the planner computes from the primary, for the
// demo, when DuckDB is not built in.
func showGaps(ctx context.Context, w io.Writer, primary durable.Tier, _ string) error {
	gaps, err := committedGaps(ctx, primary, coverage.RawSink, nil, nil)
	if err != nil {
		return err
	}
	rows := make([][]any, 0, len(gaps))
	for _, g := range gaps {
		rows = append(rows, []any{g.Sink, g.Topic, g.Partition, int64(g.Start), int64(g.End)})
	}
	fmt.Fprintln(w, "   covmirror gaps (built without cgo, so computed in Go rather than by DuckDB):")
	return writeIndentedTable(w, []string{"sink", "topic", "partition", "start", "end"}, rows)
}
