package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoClosingCommandsRunAsPrinted: the demo ends with commands an
// operator copies, one per line, each on the state that holds the run's
// coverage: they run as printed (word-split as a shell would), the durable
// tier's commands find the coverage and no gap, and inspect finds the pod's
// local tier with its destinations, not an empty store.
func TestDemoClosingCommandsRunAsPrinted(t *testing.T) {
	for _, kind := range []string{"iceberg", "object"} {
		t.Run(kind, func(t *testing.T) {
			state := filepath.Join(t.TempDir(), "a state")
			var out, errOut bytes.Buffer
			if err := Run(context.Background(), []string{"--state", state, "--writer", "test", "demo", "--seed", "2", "--batches", "200", "--durable", kind}, &out, &errOut); err != nil {
				t.Fatalf("demo: %v\n%s%s", err, out.String(), errOut.String())
			}
			_, closing, ok := strings.Cut(out.String(), "\nNext, each runs as printed")
			if !ok {
				t.Fatalf("the demo printed no closing commands:\n%s", out.String())
			}
			var commands [][]string
			for _, line := range strings.Split(closing, "\n")[1:] {
				if rest, ok := strings.CutPrefix(line, "  covmirror "); ok {
					commands = append(commands, shellWords(t, rest))
				}
			}
			if len(commands) != 4 {
				t.Fatalf("%d closing commands, want gaps, query summary, plan and inspect:\n%s", len(commands), closing)
			}
			for _, args := range commands {
				var stdout, stderr bytes.Buffer
				if err := Run(context.Background(), args, &stdout, &stderr); err != nil {
					t.Fatalf("covmirror %q, as printed: %v\n%s", args, err, stderr.String())
				}
				got := stdout.String()
				switch args[len(args)-1] {
				case "plan":
					if strings.TrimSpace(got) != "nothing to replay or verify" {
						t.Errorf("covmirror %q after a clean verdict:\n%s", args, got)
					}
				case "gaps":
					if !strings.HasPrefix(got, "no gaps:") {
						t.Errorf("covmirror %q after a clean verdict:\n%s", args, got)
					}
				case "summary":
					// Every sink of the run, each with 0 gaps and 0 missing.
					lines := strings.Split(strings.TrimSpace(got), "\n")
					if len(lines) != 5 {
						t.Fatalf("covmirror %q: %d lines, want a header and raw, lake, warehouse and search:\n%s", args, len(lines), got)
					}
					for _, line := range lines[1:] {
						if f := strings.Fields(line); len(f) < 5 || f[2] != "400" || f[3] != "0" || f[4] != "0" {
							t.Errorf("covmirror %q: %q is not 400 batches covered and none missing", args, line)
						}
					}
				case "inspect":
					if strings.Contains(got, ": 0 destinations") || !strings.Contains(got, "orders") {
						t.Errorf("covmirror %q shows no destination of the run:\n%s", args, got)
					}
				}
			}
		})
	}
}

// TestInspectRefusesAMissingLocalTier: inspect on a directory holding no
// local tier (a mistyped --state, or the demo's run directory, whose pods'
// tiers are below it) says so and creates nothing, rather than opening a
// fresh empty store that reports 0 destinations.
func TestInspectRefusesAMissingLocalTier(t *testing.T) {
	state := filepath.Join(t.TempDir(), "typo")
	_, errOut, err := runCLI(t, state, "inspect")
	if err == nil || !strings.Contains(err.Error(), "no local tier at") || !strings.Contains(err.Error(), "--state of a pod") {
		t.Fatalf("inspect on a state without a local tier: %v %s", err, errOut)
	}
	if _, statErr := os.Stat(filepath.Join(state, "local")); !os.IsNotExist(statErr) {
		t.Fatalf("inspect created the local tier it was asked to read: %v", statErr)
	}
}
