package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// extentsFlag registers --acked-ends on a command that looks for raw's
// holes (plan, gaps, the gaps, summary and lag queries).
func extentsFlag(fs *flag.FlagSet) *string {
	return fs.String("acked-ends", "", `JSON file ("-": standard input) of the source's acked extents, [{"topic","partition","start","end"}] (start optional, default 0): raw's holes are looked for over each whole extent, so a lost first or last stretch of a stream is found`)
}

// readExtents reads the --acked-ends file ("" reads none, "-" standard
// input); an extent without "start" takes its topic's declared start
// (--stream-start). A file that cannot be read is a failure (exit 1); one that is not
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
	es, err := coverage.ParseExtentsStarting(r, g.starts)
	if err != nil {
		return nil, usageError{fmt.Errorf("%s: --acked-ends %s: %w", command, path, err)}
	}
	return es, nil
}

// addStart reads one --stream-start TOPIC=N (or config start.TOPIC = N)
// into starts.
func addStart(starts map[string]uint64, topic, n string) error {
	topic, n = strings.TrimSpace(topic), strings.TrimSpace(n)
	if err := (coverage.Extent{Topic: topic}).Validate(); err != nil {
		return fmt.Errorf("stream start of %q: %w", topic, err)
	}
	v, err := strconv.ParseUint(n, 10, 64)
	if err != nil || v > coverage.MaxBatchEnd {
		return fmt.Errorf("stream start of %s: %q is not a batch id (0 to %d)", topic, n, uint64(coverage.MaxBatchEnd))
	}
	if _, dup := starts[topic]; dup {
		return fmt.Errorf("stream start of %s is given twice: give each topic one", topic)
	}
	starts[topic] = v
	return nil
}
