package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/covmirror/covmirror/compaction"
)

func runCompact(ctx context.Context, g *globals, args []string) error {
	fs := subFlags(g, "compact", "[--json]")
	asJSON := fs.Bool("json", false, "print a one-line JSON summary")
	if err := parse(fs, args); err != nil {
		return err
	}
	table, err := g.openTable(ctx)
	if err != nil {
		return err
	}
	res, err := compaction.Compact(ctx, table, compaction.Options{})
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(g.stdout).Encode(res)
	}
	fmt.Fprintf(g.stdout, "compacted %d sink(s): %d files (%d rows) into %d files (%d rows)\n",
		res.Partitions, res.FilesRead, res.RowsRead, res.FilesWritten, res.RowsWritten)
	return nil
}
