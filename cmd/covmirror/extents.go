package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

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
		return nil, usageError{Err: fmt.Errorf("%s: --acked-ends %s: %w", command, path, err)}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: --acked-ends %s: %w: check the file or pipe and run again", command, path, err)
	}
	return es, nil
}

// namedSinks are --sinks and --topic-sinks of plan, gaps and query: the
// named sinks of a topic are its --topic-sinks list where it has one, else
// --sinks (coverage.SinksFor).
type namedSinks struct {
	Sinks      []string
	TopicSinks map[string][]string
}

func (n *namedSinks) given() bool { return len(n.Sinks) > 0 || n.TopicSinks != nil }

// topicSinksUse documents --topic-sinks.
const topicSinksUse = "TOPIC=SINK,SINK: the sinks TOPIC is written to, in place of --sinks for that topic (TOPIC= for none), repeatable, one topic each; the sinks with rows of a topic are planned whatever is named"

// sinksFlag registers --sinks and --topic-sinks of plan, gaps and query:
// sink names, comma-separated, each valid (recovery.PlanOptions.Sinks and
// TopicSinks); a topic given twice is refused.
func sinksFlag(fs *flag.FlagSet, use string) *namedSinks {
	n := &namedSinks{}
	fs.Func("sinks", use, func(v string) (err error) {
		n.Sinks, err = parseSinks(v)
		return err
	})
	fs.Func("topic-sinks", topicSinksUse, func(v string) error {
		if n.TopicSinks == nil {
			n.TopicSinks = map[string][]string{}
		}
		return coverage.AddTopicSinks(n.TopicSinks, v)
	})
	return n
}
