package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoObject runs the demo with the sink objects as the durable tier,
// given as the global --durable and as demo's own flag: the verdict holds,
// the objects are under the run's directory, a seed replays the same run,
// and the story the pipeline tells (what each owner checkpointed and
// replayed, the gaps and the recovery) is the coverage table demo's, line
// for line: the tier changes where coverage lives, not what it says.
func TestDemoObject(t *testing.T) {
	state := t.TempDir()
	run := func(seed string, args ...string) (string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		all := append([]string{"--state", state, "--writer", "test"}, args...)
		if err := Run(context.Background(), append(all, "--seed", seed, "--batches", "200"), &out, &errOut); err != nil {
			t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		text := out.String()
		_, afterRecovery, _ := strings.Cut(text, "\n5. ")
		if !strings.Contains(text, "Verdict") || !strings.Contains(afterRecovery, "(no rows)") {
			t.Fatalf("%s --seed %s printed no verdict or left gaps:\n%s", strings.Join(args, " "), seed, text)
		}
		dir := text[strings.Index(text, "State: ")+len("State: "):]
		dir = dir[:strings.Index(dir, ";")]
		return strings.ReplaceAll(text, dir, "STATE"), dir
	}
	first, dir := run("3", "--durable", "object", "demo")
	if !strings.Contains(first, "replicated into the coverage table") || !strings.Contains(first, "--durable object gaps") {
		t.Fatalf("the object demo does not say it mirrors, or how to look:\n%s", first)
	}
	if entries, err := os.ReadDir(filepath.Join(dir, "objects", "sinks")); err != nil || len(entries) != 4 {
		t.Fatalf("sink objects under the run's directory: %v, %v; want raw and three sinks", entries, err)
	}
	again, _ := run("3", "demo", "--durable", "object")
	if again != first {
		t.Fatalf("the same seed ran differently:\n--- first\n%s--- again\n%s", first, again)
	}
	for _, seed := range []string{"1", "2"} {
		run(seed, "demo", "--durable", "object")
	}
	table, _ := run("3", "demo")
	if got, want := story(first), story(table); got != want {
		t.Fatalf("the object demo's story differs from the table's:\n--- object\n%s--- table\n%s", got, want)
	}
}

// story keeps the lines that say what the pipeline did, dropping those that
// name the tier or its upkeep (compaction, mirroring).
func story(text string) string {
	var keep []string
	for _, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "batch "), strings.HasPrefix(trimmed, "2. "), strings.HasPrefix(trimmed, "4. "),
			strings.HasPrefix(trimmed, "- every one"), strings.HasPrefix(trimmed, "- the price"),
			strings.Contains(trimmed, ": replay "), strings.Contains(trimmed, "replay tasks"),
			strings.HasPrefix(trimmed, "warehouse "), trimmed == "(no rows)":
			keep = append(keep, trimmed)
		}
	}
	return strings.Join(keep, "\n") + "\n"
}
