package gapspec

import (
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestGapSpecParses: every case of the spec parses, and its expected text has
// the three sections in order, as Result.String prints them. The engines'
// runners check the text itself.
func TestGapSpecParses(t *testing.T) {
	datadriven.RunTest(t, File(), func(t *testing.T, d *datadriven.TestData) string {
		if _, err := Parse(d); err != nil {
			d.Fatalf(t, "%v", err)
		}
		g, h, s := strings.Index(d.Expected, "gaps:\n"), strings.Index(d.Expected, "holes:\n"), strings.Index(d.Expected, "summary:\n")
		if g != 0 || h < g || s < h {
			d.Fatalf(t, "the expected text is not gaps, holes and summary in order:\n%s", d.Expected)
		}
		return d.Expected
	})
}

// TestGapSpecRefusesBadInput: a malformed case fails to parse, rather than
// reaching the engines as another history.
func TestGapSpecRefusesBadInput(t *testing.T) {
	for _, c := range []struct{ args, input string }{
		{"colour=blue", ""},
		{"", "raw orders/0 [5,5)"},
		{"", "raw orders/0 [5,3)"},
		{"", "raw orders [0,5)"},
		{"", "raw orders/0 0:5"},
		{"", "extent orders/0 [9,4)"},
		{"", "extent orders/0 [0,4)\nextent orders/0 [0,5)"},
		{"", "start orders"},
		{"partition=x", ""},
		{"topic-sinks=orders", ""},
		{"topic-sinks=orders=a;orders=b", ""},
	} {
		d := &datadriven.TestData{Cmd: "gaps", Input: c.input}
		if c.args != "" {
			k, v, _ := strings.Cut(c.args, "=")
			d.CmdArgs = []datadriven.CmdArg{{Key: k, Vals: []string{v}}}
		}
		if _, err := Parse(d); err == nil {
			t.Errorf("args %q input %q parsed", c.args, c.input)
		}
	}
}
