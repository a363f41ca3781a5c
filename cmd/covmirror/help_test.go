package main

import (
	"slices"
	"strings"
	"testing"
)

// TestHelpHasNoPanics: --help, global or a command's, lists the flags with
// their defaults. Every flag is wrapped (onceValue) by then, and the flag
// package calls String on a zero value of the wrapper to tell a default
// from none: that must not be a nil dereference the flag package prints as
// "panic calling String method".
func TestHelpHasNoPanics(t *testing.T) {
	names := []string{""}
	for name := range commands {
		if name != "query" || haveDuckDB { // without DuckDB, query has no flags to list
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		args := []string{"--help"}
		if name != "" {
			args = []string{name, "--help"}
		}
		out, errOut, err := runCLI(t, t.TempDir(), args...)
		if exitCode(err) != 0 {
			t.Errorf("%q: exit %d: %v", args, exitCode(err), err)
		}
		if text := out + errOut; strings.Contains(text, "panic") || !strings.Contains(text, "usage: covmirror") {
			t.Errorf("%q printed:\n%s", args, text)
		}
	}
	// A default still shows.
	_, errOut, _ := runCLI(t, t.TempDir(), "gaps", "--help")
	if !strings.Contains(errOut, `(default raw)`) {
		t.Errorf("gaps --help lacks --reference's default:\n%s", errOut)
	}
}
