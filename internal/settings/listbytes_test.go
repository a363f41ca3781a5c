package settings

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

// TestListItemsAreExactBytes: a List's items are the same names whether
// given by flag, environment or file: " search" after a comma is its own
// name everywhere (the flag always kept it), never trimmed into "search"
// by the environment or the file; only empty items there are skipped.
func TestListItemsAreExactBytes(t *testing.T) {
	table := []Setting{{Key: "sinks", Kind: List, Parse: func(v string) ([]string, error) { return strings.Split(v, ","), nil }}}
	want := []string{"lake", " search", "\u00a0x "}
	const given = "lake, search,\u00a0x "
	read := func(file string, args ...string) []string {
		t.Helper()
		var f *File
		if file != "" {
			f = loadFile(t, table, file)
		}
		set := New(table, f)
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		set.Register(fs, "")
		if err := Parse(fs, args, noRepeat); err != nil {
			t.Fatal(err)
		}
		if err := set.Err(); err != nil {
			t.Fatal(err)
		}
		return set.List("sinks")
	}
	if got := read("", "--sinks="+given); !slices.Equal(got, want) {
		t.Errorf("flag: %q, want %q", got, want)
	}
	if got := read("sinks = " + given + ",\n"); !slices.Equal(got, want) {
		t.Errorf("file: %q, want %q", got, want)
	}
	t.Setenv("COVMIRROR_SINKS", given+",")
	if got := read(""); !slices.Equal(got, want) {
		t.Errorf("environment: %q, want %q", got, want)
	}
}
