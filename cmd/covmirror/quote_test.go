package main

import (
	"strings"
	"testing"
	"unicode"
)

// TestGapsAndPlanQuoteTopics: a topic may hold any UTF-8 but NUL, a line
// break and a terminal's CSI (U+009B) included; gaps and plan print such a
// topic quoted in their text, so that it neither forges a line nor acts
// on the terminal, and reads back as its exact bytes.
func TestGapsAndPlanQuoteTopics(t *testing.T) {
	state := t.TempDir()
	const topic = "o\nlake/orders/0 [0,1) missing 1 batches\u009b2J"
	mustRun(t, state, "record", "--sink", "raw", "--topic", topic, "--partition", "0", "--range", "0:5")
	mustRun(t, state, "record", "--sink", "raw", "--topic", topic, "--partition", "0", "--range", "6:10")
	mustRun(t, state, "record", "--sink", "lake", "--topic", topic, "--partition", "0", "--range", "0:5")
	mustRun(t, state, "checkpoint")
	for _, cmd := range []string{"gaps", "plan"} {
		out := mustRun(t, state, cmd)
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		if len(lines) != 2 {
			t.Errorf("%s: %d lines; want 2 (a hole of raw, a gap of the lake):\n%s", cmd, len(lines), out)
		}
		for _, line := range lines {
			if i := strings.IndexFunc(line, func(r rune) bool { return !unicode.IsPrint(r) }); i >= 0 {
				t.Errorf("%s prints %q as itself: %q", cmd, []rune(line[i:])[0], line)
			}
		}
		if !strings.Contains(out, `lake/"o\nlake/orders/0 [0,1) missing 1 batches\u009b2J"/0 [6,10)`) {
			t.Errorf("%s: the lake's gap is not named by its quoted topic:\n%s", cmd, out)
		}
	}
}

// TestNoReferenceQuotesTheSinks: gaps and plan against a reference without
// rows list the sinks the table has, each quoted, so that a sink named
// with a comma and a space reads as one name.
func TestNoReferenceQuotesTheSinks(t *testing.T) {
	state := t.TempDir()
	const sink = "lake, search raw"
	mustRun(t, state, "record", "--sink", "raw", "--topic", "t", "--partition", "0", "--range", "0:5")
	mustRun(t, state, "record", "--sink", sink, "--topic", "t", "--partition", "0", "--range", "0:5")
	mustRun(t, state, "checkpoint")
	for _, cmd := range []string{"gaps", "plan"} {
		_, _, err := runCLI(t, state, cmd, "--reference", "rwa")
		if err == nil || !strings.Contains(err.Error(), `"lake, search raw", "raw"`) {
			t.Errorf("%s --reference rwa: %v; want the sinks quoted", cmd, err)
		}
	}
}
