package gapspec

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
)

// The kinds every surface prints: a sink's gap is replayed from raw; a gap
// of the reference itself (a hole of raw) is verified against what raw
// holds.
const (
	KindReplay          = "replay"
	KindVerifyReference = "verify-reference"
)

// Case is one history of the spec, parsed:
//
//	gaps [reference=NAME] [sink=NAME] [topic=NAME] [partition=N] [sinks=(A,B)]
//	     [topic-sinks=(T=A,B;U=)]
//	SINK TOPIC/PARTITION [START,END) ...   rows as recorded (they may overlap)
//	extent TOPIC/PARTITION [START,END)     the source's acked extent
//	extent TOPIC/PARTITION END             one starting at the topic's stream start
//	start TOPIC N                          a topic's stream start (default 0)
//	state ID SINK TOPIC/PARTITION [START,END) STATE AT
//	                                       a gap state event (package gapstate),
//	                                       decided AT seconds after StateEpoch
//
// reference defaults to raw; sink, topic and partition filter the gaps
// printed (not the holes); sinks are sinks every topic is written to,
// besides those with rows; topic-sinks name a topic's sinks in place of
// sinks (coverage.SinksFor), topics separated by semicolons, T= naming
// none for T.
type Case struct {
	Reference  string
	Filter     Filter
	Sinks      []string
	TopicSinks map[string][]string
	// Rows are the recorded rows in input order, one range each, in one
	// checkpoint: overlapping and repeated rows are kept as they are.
	Rows    []Row
	Extents []coverage.Extent
	// States are the gap state events, in input order; their reason is
	// "r ID" and their decider "spec".
	States []gapstate.Event
}

// StateEpoch is the time a state line's AT counts seconds from.
var StateEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Filter selects the gaps printed; zero fields match everything.
type Filter struct {
	Sink      string
	Topic     string
	Partition *int32
}

// Row is one recorded range of a destination.
type Row struct {
	Destination coverage.Destination
	Range       coverage.Range
}

// Gap is one gap an engine found: Destination lacks Range. Kind is
// replay, verify-reference or the state holding it out of the plan
// (refused, unrecoverable, waived), Event the deciding event's ID then.
type Gap struct {
	Destination coverage.Destination
	Range       coverage.Range
	Kind        string
	Event       string
}

// Result is what an engine answers for a case: the gaps the filter
// selects, the reference's holes in every partition (the filter does not
// apply) as gaps of the reference, and the summary of the gaps the filter
// selects, one row of cells (SummaryColumns) per sink.
type Result struct {
	Gaps    []Gap
	Holes   []Gap
	Summary [][]string
}

// File is the spec's path, for every runner whatever its package.
func File() string {
	_, self, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(self), "testdata", "gaps")
}

// Run runs every case of the spec through run, comparing its answer with
// the expected text (datadriven's -rewrite regenerates it).
func Run(t *testing.T, run func(t *testing.T, c Case) Result) {
	datadriven.RunTest(t, File(), func(t *testing.T, d *datadriven.TestData) string {
		if d.Cmd != "gaps" {
			d.Fatalf(t, "unknown command %q: the spec has only gaps", d.Cmd)
		}
		c, err := Parse(d)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		return run(t, c).String()
	})
}

// Parse reads one case.
func Parse(d *datadriven.TestData) (Case, error) {
	c := Case{Reference: coverage.RawSink}
	for _, a := range d.CmdArgs {
		one := func() (string, error) {
			if len(a.Vals) != 1 {
				return "", fmt.Errorf("%s wants one value, got %v", a.Key, a.Vals)
			}
			return a.Vals[0], nil
		}
		var err error
		switch a.Key {
		case "reference":
			c.Reference, err = one()
		case "sink":
			c.Filter.Sink, err = one()
		case "topic":
			c.Filter.Topic, err = one()
		case "partition":
			var v string
			if v, err = one(); err == nil {
				var p int64
				if p, err = strconv.ParseInt(v, 10, 32); err == nil {
					part := int32(p)
					c.Filter.Partition = &part
				}
			}
		case "sinks":
			c.Sinks = slices.Clone(a.Vals)
		case "topic-sinks":
			c.TopicSinks, err = parseTopicSinks(a.Vals)
		default:
			err = fmt.Errorf("unknown argument %q", a.Key)
		}
		if err != nil {
			return Case{}, err
		}
	}
	starts := map[string]uint64{}
	type endOnly struct {
		tp  topicPartition
		end uint64
	}
	var ends []endOnly
	for _, line := range strings.Split(d.Input, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		bad := func(err error) (Case, error) { return Case{}, fmt.Errorf("line %q: %w", line, err) }
		switch f[0] {
		case "start":
			if len(f) != 3 {
				return bad(fmt.Errorf("want start TOPIC N"))
			}
			n, err := strconv.ParseUint(f[2], 10, 64)
			if err != nil {
				return bad(err)
			}
			starts[f[1]] = n
		case "state":
			if len(f) != 7 {
				return bad(fmt.Errorf("want state ID SINK TOPIC/PARTITION [START,END) STATE AT"))
			}
			tp, err := parseTopicPartition(f[3])
			if err != nil {
				return bad(err)
			}
			r, err := parseRange(f[4])
			if err != nil {
				return bad(err)
			}
			at, err := strconv.ParseUint(f[6], 10, 32)
			if err != nil {
				return bad(err)
			}
			e := gapstate.Event{ID: f[1], Destination: coverage.Destination{Sink: f[2], Topic: tp.topic, Partition: tp.partition},
				Range: r, State: gapstate.State(f[5]), Reason: "r " + f[1], By: "spec", At: StateEpoch.Add(time.Duration(at) * time.Second)}
			if err := e.Validate(); err != nil {
				return bad(err)
			}
			c.States = append(c.States, e)
		case "extent":
			if len(f) != 3 {
				return bad(fmt.Errorf("want extent TOPIC/PARTITION [START,END) or END"))
			}
			tp, err := parseTopicPartition(f[1])
			if err != nil {
				return bad(err)
			}
			if !strings.HasPrefix(f[2], "[") {
				n, err := strconv.ParseUint(f[2], 10, 64)
				if err != nil {
					return bad(err)
				}
				ends = append(ends, endOnly{tp, n})
				continue
			}
			r, err := parseRange(f[2])
			if err != nil {
				return bad(err)
			}
			c.Extents = append(c.Extents, coverage.Extent{Topic: tp.topic, Partition: tp.partition, Start: r.Start, End: r.End})
		default:
			if len(f) < 3 {
				return bad(fmt.Errorf("want SINK TOPIC/PARTITION and one or more [START,END)"))
			}
			tp, err := parseTopicPartition(f[1])
			if err != nil {
				return bad(err)
			}
			d := coverage.Destination{Sink: f[0], Topic: tp.topic, Partition: tp.partition}
			for _, text := range f[2:] {
				r, err := parseRange(text)
				if err != nil {
					return bad(err)
				}
				if err := coverage.ValidateRecord(d, r); err != nil {
					return bad(err)
				}
				c.Rows = append(c.Rows, Row{Destination: d, Range: r})
			}
		}
	}
	for _, e := range ends {
		c.Extents = append(c.Extents, coverage.Extent{Topic: e.tp.topic, Partition: e.tp.partition, Start: starts[e.tp.topic], End: e.end})
	}
	if _, err := coverage.ValidateExtents(c.Extents); err != nil {
		return Case{}, err
	}
	return c, nil
}

type topicPartition struct {
	topic     string
	partition int32
}

// parseTopicPartition reads TOPIC/PARTITION; the topic may hold a slash.
func parseTopicPartition(s string) (topicPartition, error) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return topicPartition{}, fmt.Errorf("%q is not TOPIC/PARTITION", s)
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil {
		return topicPartition{}, fmt.Errorf("partition of %q: %w", s, err)
	}
	return topicPartition{s[:i], int32(p)}, nil
}

// parseRange reads [START,END), as coverage.Range prints it, unvalidated:
// an extent may be empty.
func parseRange(s string) (coverage.Range, error) {
	inner, ok := strings.CutPrefix(s, "[")
	inner, ok2 := strings.CutSuffix(inner, ")")
	start, end, ok3 := strings.Cut(inner, ",")
	if !ok || !ok2 || !ok3 {
		return coverage.Range{}, fmt.Errorf("%q is not [START,END)", s)
	}
	var r coverage.Range
	var err error
	if r.Start, err = strconv.ParseUint(start, 10, 64); err != nil {
		return coverage.Range{}, fmt.Errorf("start of %q: %w", s, err)
	}
	if r.End, err = strconv.ParseUint(end, 10, 64); err != nil {
		return coverage.Range{}, fmt.Errorf("end of %q: %w", s, err)
	}
	return r, nil
}

// Coverage is the rows merged per destination, as a durable tier holds
// them.
func (c Case) Coverage() map[coverage.Destination]*coverage.RangeSet {
	out := map[coverage.Destination]*coverage.RangeSet{}
	for _, r := range c.Rows {
		if out[r.Destination] == nil {
			out[r.Destination] = new(coverage.RangeSet)
		}
		_ = out[r.Destination].Add(r.Range) // validated by Parse
	}
	return out
}

// Checkpoint is the rows as one checkpoint, one range per row in input
// order, grouped by destination only where consecutive rows share one.
func (c Case) Checkpoint() []coverage.DestinationRanges {
	var out []coverage.DestinationRanges
	for _, r := range c.Rows {
		if n := len(out); n > 0 && out[n-1].Destination == r.Destination {
			out[n-1].Ranges = append(out[n-1].Ranges, r.Range)
			continue
		}
		out = append(out, coverage.DestinationRanges{Destination: r.Destination, Ranges: []coverage.Range{r.Range}})
	}
	return out
}

// Partitions are the (topic, partition) pairs of the rows and the
// extents, sorted, as the reference's destinations.
func (c Case) Partitions() []coverage.Destination {
	set := map[coverage.Destination]bool{}
	for _, r := range c.Rows {
		set[r.Destination.WithSink(c.Reference)] = true
	}
	for _, e := range c.Extents {
		set[coverage.Destination{Sink: c.Reference, Topic: e.Topic, Partition: e.Partition}] = true
	}
	return slices.SortedFunc(maps.Keys(set), coverage.Destination.Compare)
}

// Selects reports whether the case's filter selects d.
func (c Case) Selects(d coverage.Destination) bool {
	f := c.Filter
	return (f.Sink == "" || d.Sink == f.Sink) && (f.Topic == "" || d.Topic == f.Topic) && (f.Partition == nil || d.Partition == *f.Partition)
}

// KindOf is the kind of a gap of sink against reference, as every surface
// derives it.
func KindOf(sink, reference string) string {
	if sink == reference {
		return KindVerifyReference
	}
	return KindReplay
}

// String prints r canonically: gaps sorted by destination and start, the
// reference's holes, then the summary sorted by sink.
func (r Result) String() string {
	var b strings.Builder
	b.WriteString("gaps:\n")
	writeGaps(&b, r.Gaps, true)
	b.WriteString("holes:\n")
	writeGaps(&b, r.Holes, false)
	b.WriteString("summary:\n")
	rows := slices.Clone(r.Summary)
	slices.SortFunc(rows, func(x, y []string) int { return cmp.Compare(x[0], y[0]) })
	if len(rows) == 0 {
		b.WriteString("  none\n")
	}
	for _, row := range rows {
		if len(row) != len(SummaryColumns) {
			fmt.Fprintf(&b, "  a row of %d cells, not %d: %q\n", len(row), len(SummaryColumns), row)
			continue
		}
		fmt.Fprintf(&b, "  %s ranges=%s covered=%s gaps=%s missing=%s oldest=", row[0], row[1], row[2], row[3], row[4])
		if row[5] == "NULL" {
			b.WriteString("none")
		} else {
			fmt.Fprintf(&b, "%s/%s [%s,%s)", row[5], row[6], row[7], row[8])
		}
		// The held batches by kind, where there are any.
		for i, kind := range []string{"refused", "unrecoverable", "waived"} {
			if row[9+i] != "0" {
				fmt.Fprintf(&b, " %s=%s", kind, row[9+i])
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func writeGaps(b *strings.Builder, gaps []Gap, kinds bool) {
	gaps = slices.Clone(gaps)
	slices.SortFunc(gaps, func(x, y Gap) int {
		return cmp.Or(x.Destination.Compare(y.Destination), cmp.Compare(x.Range.Start, y.Range.Start), cmp.Compare(x.Range.End, y.Range.End))
	})
	if len(gaps) == 0 {
		b.WriteString("  none\n")
	}
	for _, g := range gaps {
		d := g.Destination
		fmt.Fprintf(b, "  %s %s/%d %s", d.Sink, d.Topic, d.Partition, g.Range)
		if kinds {
			fmt.Fprintf(b, " %s", g.Kind)
		}
		if g.Event != "" {
			fmt.Fprintf(b, " %s", g.Event)
		}
		b.WriteString("\n")
	}
}
