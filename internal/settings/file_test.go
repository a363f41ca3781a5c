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

// TestLoadNeverEchoesALineWithoutEquals: a line that is not key = value is
// most often a credential pasted with a space or a colon for its = (a
// secret key, a URL with its password): the refusal names the line by its
// number, never its text.
func TestLoadNeverEchoesALineWithoutEquals(t *testing.T) {
	const secret = "Zq81fa77SecretValue"
	for _, line := range []string{
		"catalog.s3.secret-access-key " + secret,
		"catalog.header.Authorization: " + secret,
		"postgres.url postgres://u:" + secret + "@db/lake",
		secret,
	} {
		path := filepath.Join(t.TempDir(), "c.conf")
		if err := os.WriteFile(path, []byte("state = /srv/x\n"+line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path, []Setting{{Key: "state"}, {Key: "postgres.url", Kind: Secret}})
		if err == nil {
			t.Fatalf("%q was taken", line)
		}
		if strings.Contains(err.Error(), secret[:8]) || !strings.Contains(err.Error(), "c.conf:2:") {
			t.Errorf("line %q: %v", line, err)
		}
	}
}

// TestLoadNeverEchoesAnUnknownKeyThatIsNoKey: a pasted credential may
// hold an = of its own (base64's padding, a DSN's or a URL's parameters),
// so that the text before it is read as a key: the refusal shows an
// unknown key only when it has a key's shape (lowercase words joined by
// ., - or _), and names the line by its number otherwise. A misspelt key
// is still shown.
func TestLoadNeverEchoesAnUnknownKeyThatIsNoKey(t *testing.T) {
	const secret = "Zq81fa77SecretValue"
	table := []Setting{{Key: "state"}, {Key: "postgres.url", Kind: Secret}, {Key: "sync", Kind: Bool}}
	for _, line := range []string{
		secret + "==",
		"wJalrXUtnFEMI/K7MDENG+" + secret + "=",
		"postgres://u:" + secret + "@db/lake?sslmode=require",
		"host=db user=u password=" + secret,
		"Bearer " + secret + "=",
		"aws_secret_access_key " + secret + "=x",
		strings.ToLower(secret) + "x7k2m9q4w8e1r5t3y6u0=",
	} {
		path := filepath.Join(t.TempDir(), "c.conf")
		if err := os.WriteFile(path, []byte("state = /srv/x\n"+line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Load(path, table)
		if err == nil {
			t.Fatalf("%q was taken", line)
		}
		if strings.Contains(strings.ToLower(err.Error()), strings.ToLower(secret[:8])) || !strings.Contains(err.Error(), "c.conf:2:") {
			t.Errorf("line %q: %v", line, err)
		}
	}
	for _, key := range []string{"stat", "postgres.uri", "object.s3_region", "catalog.x-auth"} {
		path := filepath.Join(t.TempDir(), "c.conf")
		if err := os.WriteFile(path, []byte(key+" = v\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(path, table); err == nil || !strings.Contains(err.Error(), `unknown key "`+key+`"`) {
			t.Errorf("misspelt key %q: %v; want it named", key, err)
		}
	}
}
