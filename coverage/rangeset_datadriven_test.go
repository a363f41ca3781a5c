package coverage

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestRangeSetDataDriven runs the command language in testdata/rangeset.
// Regenerate expectations with: go test ./coverage -run DataDriven -rewrite
//
//	add [set=NAME]          input: one START:END per line; prints the set
//	merge [set=NAME]        like add, printing what each addition replaced
//	union dst=NAME src=NAME prints dst after dst |= src
//	gaps ref=NAME set=NAME  prints ref minus set
//	contains set=NAME batch=N | range=START:END
//	count [set=NAME]        prints the number of ranges and of batches
//	equal a=NAME b=NAME
//	reset
//
// Sets are named; NAME defaults to "a". Input ranges are parsed without
// validation so that invalid ones reach the set.
func TestRangeSetDataDriven(t *testing.T) {
	sets := map[string]*RangeSet{}
	get := func(d *datadriven.TestData, key string) *RangeSet {
		name := "a"
		if d.HasArg(key) {
			d.ScanArgs(t, key, &name)
		}
		if sets[name] == nil {
			sets[name] = new(RangeSet)
		}
		return sets[name]
	}
	datadriven.RunTest(t, "testdata/rangeset", func(t *testing.T, d *datadriven.TestData) string {
		switch d.Cmd {
		case "reset":
			sets = map[string]*RangeSet{}
			return ""
		case "add", "merge":
			s := get(d, "set")
			var out strings.Builder
			for _, line := range nonEmptyLines(d.Input) {
				r, err := parseUnchecked(line)
				if err != nil {
					d.Fatalf(t, "%v", err)
				}
				m, err := s.MergeRange(r, nil)
				switch {
				case err != nil:
					fmt.Fprintf(&out, "error: %v\n", err)
				case d.Cmd == "merge":
					fmt.Fprintf(&out, "%s: merged %s replaced %v added %d\n", r, m.Merged, m.Replaced, m.Added)
				}
			}
			out.WriteString(s.String())
			return out.String()
		case "union":
			dst, src := get(d, "dst"), get(d, "src")
			dst.Union(src)
			return dst.String()
		case "gaps":
			g := Gaps(get(d, "ref"), get(d, "set"))
			return g.String()
		case "contains":
			s := get(d, "set")
			if d.HasArg("batch") {
				var b uint64
				d.ScanArgs(t, "batch", &b)
				return strconv.FormatBool(s.Contains(b))
			}
			var text string
			d.ScanArgs(t, "range", &text)
			r, err := parseUnchecked(text)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			return strconv.FormatBool(s.ContainsRange(r))
		case "count":
			s := get(d, "set")
			return fmt.Sprintf("ranges=%d batches=%d", s.Len(), s.Batches())
		case "equal":
			return strconv.FormatBool(get(d, "a").Equal(get(d, "b")))
		}
		d.Fatalf(t, "unknown command %q", d.Cmd)
		return ""
	})
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func parseUnchecked(s string) (Range, error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return Range{}, fmt.Errorf("range %q is not START:END", s)
	}
	start, err := strconv.ParseUint(a, 10, 64)
	if err != nil {
		return Range{}, err
	}
	end, err := strconv.ParseUint(b, 10, 64)
	if err != nil {
		return Range{}, err
	}
	return Range{Start: start, End: end}, nil
}
