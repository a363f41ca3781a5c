package main

import (
	"context"
	"strings"
	"testing"
	"unicode"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/lite"
	"github.com/covmirror/covmirror/local"
)

// recordOld records r of d straight into the local tier under state, as a
// store written before the write surfaces' name rule (coverage.ValidName)
// may hold it.
func recordOld(t *testing.T, state string, d coverage.Destination, r coverage.Range) {
	t.Helper()
	store, err := local.Open(local.Options{Dir: lite.LocalDir(state)})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Record(context.Background(), d, r); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOldControlNamesReadQuoted: a topic holding a line break and a
// terminal's CSI (U+009B), which record now refuses, may be in a store
// from before; it still checkpoints, and gaps, plan, query gaps and
// inspect print it quoted in their text, so that it neither forges a
// line nor acts on the terminal, and reads back as its exact bytes.
func TestOldControlNamesReadQuoted(t *testing.T) {
	state := t.TempDir()
	const topic = "o\nlake/orders/0 [0,1) missing 1 batches\u009b2J"
	if _, _, err := runCLI(t, state, "record", "--sink", "raw", "--topic", topic, "--range", "0:5"); exitCode(err) != 2 || !strings.Contains(err.Error(), "control character") {
		t.Fatalf("record of topic %q: %v; want exit 2 naming the control character", topic, err)
	}
	recordOld(t, state, coverage.Destination{Sink: "raw", Topic: topic}, coverage.Range{Start: 0, End: 5})
	recordOld(t, state, coverage.Destination{Sink: "raw", Topic: topic}, coverage.Range{Start: 6, End: 10})
	recordOld(t, state, coverage.Destination{Sink: "lake", Topic: topic}, coverage.Range{Start: 0, End: 5})
	for _, cmd := range [][]string{{"inspect"}, {"checkpoint"}, {"gaps"}, {"plan"}, {"query", "gaps"}, {"query", "coverage"}} {
		if cmd[0] == "query" && !haveDuckDB {
			continue
		}
		out := mustRun(t, state, cmd...)
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if i := strings.IndexFunc(line, func(r rune) bool { return !unicode.IsPrint(r) && r != '\t' }); i >= 0 {
				t.Errorf("%s prints %q as itself: %q", cmd, []rune(line[i:])[0], line)
			}
		}
		if cmd[0] == "gaps" || cmd[0] == "plan" {
			if !strings.Contains(out, `lake/"o\nlake/orders/0 [0,1) missing 1 batches\u009b2J"/0 [6,10)`) {
				t.Errorf("%s: the lake's gap is not named by its quoted topic:\n%s", cmd, out)
			}
		}
		if cmd[0] == "query" && !strings.Contains(out, `"o\nlake/orders/0 [0,1) missing 1 batches\u009b2J"`) {
			t.Errorf("%s: the topic is not quoted:\n%s", cmd, out)
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

// TestWriteCommandsRefuseControlNames: record and the state commands
// refuse a sink or topic with a control character (coverage.ValidName),
// exit 2, the name quoted, nothing recorded.
func TestWriteCommandsRefuseControlNames(t *testing.T) {
	state := t.TempDir()
	for _, args := range [][]string{
		{"record", "--sink", "lake", "--topic", "t\nforged/orders/0 [0,1) claimed but absent: 1 batches", "--range", "0:1"},
		{"record", "--sink", "lake\x7f", "--topic", "orders", "--range", "0:1"},
		{"record", "--sink", "lake", "--topic", "orders\u0085", "--range", "0:1"},
		{"refuse", "--sink", "lake", "--topic", "t\x1b[2J", "--partition", "0", "--range", "0:1", "--reason", "r"},
		{"waive", "--sink", "lake", "--topic", "t\nx", "--partition", "0", "--range", "0:1", "--reason", "r"},
	} {
		_, _, err := runCLI(t, state, args...)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), "control character") || strings.ContainsAny(err.Error(), "\n\x7f\u0085\x1b") {
			t.Errorf("%q: exit %d %v; want 2, the control character named, the name quoted", args, exitCode(err), err)
		}
	}
	// Nothing was recorded, so no local tier was even made: inspect says so.
	if out, _, err := runCLI(t, state, "inspect"); err == nil || !strings.Contains(err.Error(), "no local tier") {
		t.Errorf("a refused record made a local tier: %v\n%s", err, out)
	}
}
