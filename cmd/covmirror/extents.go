package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/covmirror/covmirror/coverage"
)

// ackedEndsFlag is --acked-ends: the path, and whether it was given (an
// explicit empty path is a usage error, not "none").
type ackedEndsFlag struct {
	path string
	set  bool
}

func (f *ackedEndsFlag) String() string { return f.path }

func (f *ackedEndsFlag) Set(v string) error {
	if v == "" {
		return fmt.Errorf(`want a JSON file, or "-" for standard input`)
	}
	f.path, f.set = v, true
	return nil
}

// extentsFlag registers --acked-ends on the commands that look for raw's
// holes: plan, gaps and the gaps, summary and lag queries. An extent without "start" takes its topic's
// declared start (--stream-start; 0 if none).
func extentsFlag(fs *flag.FlagSet) *ackedEndsFlag {
	f := new(ackedEndsFlag)
	fs.Var(f, "acked-ends", `JSON file ("-": standard input) of the source's acked extents, [{"topic","partition","start","end"}] (start optional: the topic's --stream-start, else 0): raw's holes are looked for over each whole extent, so a lost first or last stretch of a stream is found`)
	return f
}

// readExtents reads the --acked-ends file (not given: none; "-": standard
// input); an extent without "start" takes its topic's declared start
// (--stream-start). A file that cannot be opened or read is a failure
// (exit 1); content that is not valid extents is a usage error (exit 2).
func (g *globals) readExtents(command string, flag ackedEndsFlag) ([]coverage.Extent, error) {
	if !flag.set {
		return nil, nil
	}
	path := flag.path
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
	if errors.Is(err, coverage.ErrInvalidExtent) {
		return nil, usageError{fmt.Errorf("%s: --acked-ends %s: %w", command, path, err)}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: --acked-ends %s: %w: check the file or pipe and run again", command, path, err)
	}
	return es, nil
}

// sinksFlag registers --sinks: sink names, comma-separated, each valid
// (recovery.PlanOptions.Sinks), def the default.
func sinksFlag(fs *flag.FlagSet, def, use string) *[]string {
	sinks := splitList(def)
	fs.Func("sinks", use, func(v string) error {
		sinks = nil
		for _, name := range strings.Split(v, ",") {
			d := coverage.Destination{Sink: strings.TrimSpace(name), Topic: "t"}
			if err := d.Validate(); err != nil {
				return fmt.Errorf("%q: %w: give sink names separated by commas", v, err)
			}
			sinks = append(sinks, d.Sink)
		}
		return nil
	})
	return &sinks
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
