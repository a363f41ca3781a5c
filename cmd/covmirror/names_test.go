package main

import (
	"slices"
	"testing"
)

// TestSinkNamesAreExact: --sinks takes each name as its exact bytes: "
// lake" is another sink than "lake", never trimmed into it.
func TestSinkNamesAreExact(t *testing.T) {
	got, err := parseSinks(" lake,search ")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{" lake", "search "}; !slices.Equal(got, want) {
		t.Fatalf("parseSinks: %q, want %q", got, want)
	}
}
