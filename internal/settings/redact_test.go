package settings

import (
	"strings"
	"testing"
)

// TestRedactHidesPasswords: a password never survives Redact, in a URL
// net/url parses, in one it refuses (a bare % in the password), in a
// password= parameter or in a key=value DSN.
func TestRedactHidesPasswords(t *testing.T) {
	for _, c := range []struct{ in, secret string }{
		{"postgres://u:SEKRIT@db:5432/lake", "SEKRIT"},
		{"postgres://u:pa%zzword@db:5432/lake", "pa%zzword"},
		{"postgres://u:100%@db/lake", "100%"},
		{"postgres://u:a@b%zz@db/lake", "a@b%zz"},
		{"postgres://u@db/lake?password=SEKRIT", "SEKRIT"},
		{"host=db user=u password=SEKRIT dbname=lake", "SEKRIT"},
		{"host=db password='SEK RIT' dbname=lake", "SEK RIT"},
		// A password holding a /, ? or #, unescaped: net/url refuses the
		// URL or reads the password's end as a path, query or fragment.
		{"postgres://u:pa/SEKRIT@db:5432/lake", "SEKRIT"},
		{"postgres://u:pa?SEKRIT@db:5432/lake", "SEKRIT"},
		{"postgres://u:pa#SEKRIT@db:5432/lake", "SEKRIT"},
		{"postgres://u:pa/SE%KRIT@db:5432/lake", "KRIT"},
		// libpq's other password parameters, in any case.
		{"postgres://u@db/lake?sslpassword=SEKRIT", "SEKRIT"},
		{"postgres://u@db/lake?PASSWORD=SEKRIT", "SEKRIT"},
		// A user name alone outside a database URL is a token.
		{"https://SEKRIT@git.example.com/repo", "SEKRIT"},
		{"https://SEK%zzRIT@git.example.com/repo", "RIT"},
		{"https://SEK/RIT@git.example.com/repo", "RIT"},
		{"s3://SEKRIT@bucket/prefix", "SEKRIT"},
	} {
		got := Redact(c.in)
		if strings.Contains(got, c.secret) {
			t.Errorf("Redact(%q) = %q: the password is printed", c.in, got)
		}
		if !strings.Contains(got, "xxxxx") {
			t.Errorf("Redact(%q) = %q: no redaction mark", c.in, got)
		}
	}
	// A database URL's user name alone is its role.
	for _, in := range []string{"postgres://u@db:5432/lake", "postgresql://u@db/lake", "mysql://u@db/lake"} {
		if got := Redact(in); got != in {
			t.Errorf("a database URL without a password changed: %q", got)
		}
	}
}
