package main

import (
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/version"
)

// TestVersion: each of Benthos' spellings of its version flag prints what
// covmirror's binaries print (the commit and Go version too), exit 0.
func TestVersion(t *testing.T) {
	var want strings.Builder
	if err := version.Get().Write(&want, "covmirror-benthos"); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--version", "-v"} {
		out, code := command(t, t.TempDir(), flag)
		if code != 0 || out != want.String() {
			t.Errorf("covmirror-benthos %s: exit %d, printed\n%s\nwant exit 0 and\n%s", flag, code, out, want.String())
		}
	}
}
