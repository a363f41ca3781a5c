package settings

import "testing"

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
