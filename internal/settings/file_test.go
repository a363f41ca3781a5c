package settings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStripComment: " # ..." after a value is a comment, not part
// of the value; \# is a literal #, as is a # inside a word.
func TestStripComment(t *testing.T) {
	for line, want := range map[string]string{
		"state = /srv/x   # the local tier: the pod's own disk": "state = /srv/x   ",
		"state = /srv/x\t# a tab before it":                     "state = /srv/x\t",
		"# a whole line":                                        "",
		"writer = pod#7":                                        "writer = pod#7",
		`writer = pod \#7 # seven`:                              "writer = pod #7 ",
		`catalog.uri = postgres://u:p\#w@db/lake`:               "catalog.uri = postgres://u:p#w@db/lake",
	} {
		if got := StripComment(line); got != want {
			t.Errorf("StripComment(%q) = %q, want %q", line, got, want)
		}
	}
}

// TestLoadSharedNamesEveryKey: a misspelt key in a file another binary
// reads too is refused with every key the file may hold, this binary's and
// the other's, in a sentence that ends (no dangling "and" when this table
// has no Map).
func TestLoadSharedNamesEveryKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.conf")
	if err := os.WriteFile(path, []byte("state = /srv/x\nwritter = pod-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	table := []Setting{{Key: "state"}, {Key: "log.level"}}
	_, err := LoadShared(path, table, []string{"writer", "catalog.*"})
	if err == nil {
		t.Fatal("a misspelt key was taken")
	}
	msg := err.Error()
	for _, want := range []string{`c.conf:2: unknown key "writter"`, "state", "log.level", "writer", "catalog."} {
		if !strings.Contains(msg, want) {
			t.Errorf("LoadShared's refusal %q does not name %q", msg, want)
		}
	}
	if strings.HasSuffix(strings.TrimSpace(msg), "and") || strings.Contains(msg, ", and ,") {
		t.Errorf("LoadShared's refusal %q ends mid-sentence", msg)
	}
}
