package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// TestDemo runs the demo for several seeds, each in a fresh state directory
// under the same --state: the verdict holds for each, and a seed replays
// the same run, line for line.
func TestDemo(t *testing.T) {
	state := t.TempDir()
	run := func(seed string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if err := Run(context.Background(), []string{"--state", state, "--writer", "test", "demo", "--seed", seed, "--batches", "200"}, &out, &errOut); err != nil {
			t.Fatalf("demo --seed %s: %v\n%s%s", seed, err, out.String(), errOut.String())
		}
		text := out.String()
		_, afterRecovery, _ := strings.Cut(text, "\n5. ")
		if !strings.Contains(text, "Verdict") || !strings.Contains(afterRecovery, "(no rows)") {
			t.Fatalf("demo --seed %s printed no verdict or left gaps:\n%s", seed, text)
		}
		// The run's directory differs; the rest must not.
		dir := text[strings.Index(text, "State: ")+len("State: "):]
		dir = dir[:strings.Index(dir, ";")]
		return strings.ReplaceAll(text, dir, "STATE")
	}
	first := run("3")
	for _, seed := range []string{"1", "2", "4", "5"} {
		run(seed)
	}
	if again := run("3"); again != first {
		t.Fatalf("the same seed ran differently:\n--- first\n%s--- again\n%s", first, again)
	}
	entries, _ := os.ReadDir(state)
	if len(entries) != 6 {
		t.Fatalf("%d run directories under --state, want one per run (6)", len(entries))
	}
}
