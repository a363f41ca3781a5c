package reconcile

import (
	"bytes"
	"strings"
	"testing"
	"unicode"
)

// TestTheReportQuotesNames: a topic may hold any UTF-8 but NUL (a C1
// control, a bidi override, a /) and a sink name a space at an end: the
// text report and the verdict print such names quoted, so that none acts
// on the terminal and each reads back as its exact bytes.
func TestTheReportQuotesNames(t *testing.T) {
	rep := Report{
		Checked: []Checked{{Sink: "lake "}, {Sink: " lake"}},
		Absent: []Row{{Sink: "lake ", Topic: "a\u009b2J\u202e/b", Partition: 1, Start: 0, End: 2},
			{Sink: " lake", Topic: "orders\nlake/x/0 [0,1) claimed but absent: 1 batches", Partition: 0, Start: 0, End: 1}},
	}
	var out bytes.Buffer
	WriteText(&out, rep)
	text := out.String() + Verdict(rep, nil).Error()
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		if i := strings.IndexFunc(line, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
			t.Errorf("a name printed as itself: %q", line)
		}
		if strings.HasPrefix(line, "lake/x/0") {
			t.Errorf("a line forged by a topic: %q", line)
		}
	}
	for _, want := range []string{`sink "lake ":`, `sink " lake":`, `"lake "/"a\u009b2J\u202e/b"/1 [0,2)`, `of the sinks "lake ", " lake"`} {
		if !strings.Contains(text, want) {
			t.Errorf("the report has no %s:\n%s", want, text)
		}
	}
}
