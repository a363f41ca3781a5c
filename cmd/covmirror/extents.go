package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/covmirror/covmirror/coverage"
)

// extentsFlag registers --acked-ends on a command that looks for raw's
// holes (plan, gaps, the gaps, summary and lag queries).
func extentsFlag(fs *flag.FlagSet) *string {
	return fs.String("acked-ends", "", `JSON file ("-": standard input) of the source's acked extents, [{"topic","partition","start","end"}] (start optional, default 0): raw's holes are looked for over each whole extent, so a lost first or last stretch of a stream is found`)
}

// readExtents reads the --acked-ends file ("" reads none, "-" standard
// input). A file that cannot be read is a failure (exit 1); one that is not
// valid extents is a usage error (exit 2).
func (g *globals) readExtents(command, path string) ([]coverage.Extent, error) {
	if path == "" {
		return nil, nil
	}
	var r io.Reader = g.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, fmt.Errorf("%s: --acked-ends: %w", command, err)
		}
		defer f.Close()
		r = f
	}
	es, err := coverage.ParseExtents(r)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s: --acked-ends %s: %w", command, path, err)}
	}
	return es, nil
}
