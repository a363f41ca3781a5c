package reconcile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/reconcile"
)

// TestConfigNeverRepeatsAValueInTheWrongKey: a DSN pasted into the driver,
// kind, timeout or count key is refused without being
// repeated: files are copied, committed and printed, and so are errors.
func TestConfigNeverRepeatsAValueInTheWrongKey(t *testing.T) {
	const pw = "Zq8-hunter2-secret"
	dsn := "postgres://covmirror:" + pw + "@db:5432/test"
	for _, lines := range [][]string{
		{"s.kind = sql", "s.driver = " + dsn, "s.dsn-env = S_DSN", "s.query = SELECT 1"},
		{"s.kind = " + dsn},
		{"s.kind = sql", "s.driver = pgx", "s.dsn-env = S_DSN", "s.query = SELECT 1", "s.timeout = " + dsn},
		{"s.kind = sql", "s.driver = pgx", "s.dsn-env = S_DSN", "s.query = SELECT 1", "s.count = " + dsn},
	} {
		_, err := configOf(t, lines...)
		if err == nil {
			t.Fatalf("%q: no error", lines)
		}
		if strings.Contains(err.Error(), pw) {
			t.Errorf("the credential is repeated: %v", err)
		}
		if !strings.Contains(err.Error(), "reconcile.s.") {
			t.Errorf("the key is not named: %v", err)
		}
	}
	// A short word is still shown, to say what was wrong.
	if _, err := configOf(t, "s.kind = ftp"); err == nil || !strings.Contains(err.Error(), `"ftp"`) {
		t.Fatalf("kind ftp: %v", err)
	}
}

// TestBuildRefusesAMalformedPostgresDSN: a DSN pgx cannot parse is a
// configuration mistake found when the checkers are built (as
// go-sql-driver/mysql's is), not a failed check of every destination at
// run time; and its password is not shown.
func TestBuildRefusesAMalformedPostgresDSN(t *testing.T) {
	const pw = "Zq8-hunter2-secret"
	for _, dsn := range []string{
		"postgres://covmirror:" + pw + "@127.0.0.1:notaport/test",
		"host=127.0.0.1 password=" + pw + " sslmode=bogus",
	} {
		cfgs, err := configOf(t, "s.kind = sql", "s.driver = pgx", "s.dsn-env = S_DSN", "s.query = SELECT 1")
		if err != nil {
			t.Fatal(err)
		}
		cs, err := reconcile.Build(cfgs, reconcile.BuildOptions{LookupEnv: envOf(map[string]string{"S_DSN": dsn})})
		if err == nil {
			cs.Close()
			t.Fatalf("%s: built", dsn)
		}
		if strings.Contains(err.Error(), pw) || !strings.Contains(err.Error(), `"s"`) || !strings.Contains(err.Error(), "S_DSN") {
			t.Fatalf("the error shows the password or names neither the sink nor the variable: %v", err)
		}
		if errors.Is(err, reconcile.ErrNoChecker) {
			t.Fatal("not a missing checker")
		}
	}
}
