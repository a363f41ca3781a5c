package settings

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func testTable() []Setting {
	return []Setting{
		{Key: "state", Default: "./data", Usage: "state"},
		{Key: "replicate-every", Aliases: []string{"mirror-every"}, Kind: Duration, Default: "1m", Commands: []string{"serve"}, Usage: "every"},
		{Key: "source", Env: "COVMIRROR_SOURCES", Kind: Map, Entry: "NAME", Commands: []string{"serve"}, Usage: "sources",
			Add: func(m map[string]string, kv string) error {
				k, v, _ := strings.Cut(kv, "=")
				m[strings.TrimSpace(k)] = strings.TrimSpace(v)
				return nil
			}},
	}
}

func parse(t *testing.T, file string, command string, args ...string) *Set {
	t.Helper()
	table := testTable()
	var f *File
	if file != "" {
		path := filepath.Join(t.TempDir(), "c.conf")
		if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
			t.Fatal(err)
		}
		var err error
		if f, err = Load(path, table); err != nil {
			t.Fatal(err)
		}
	}
	set := New(table, f)
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	set.Register(fs, command)
	if err := Parse(fs, args, func(name string) bool { return Repeatable(table, name) }); err != nil {
		t.Fatal(err)
	}
	if err := set.Err(); err != nil {
		t.Fatal(err)
	}
	return set
}

// TestPrecedence: a flag, else the environment, else the file, else the
// default, per setting.
func TestPrecedence(t *testing.T) {
	if got := parse(t, "", "").String("state"); got != "./data" {
		t.Errorf("default: %q", got)
	}
	if got := parse(t, "state = /file\n", "").String("state"); got != "/file" {
		t.Errorf("file: %q", got)
	}
	t.Setenv("COVMIRROR_STATE", "/env")
	if got := parse(t, "state = /file\n", "").String("state"); got != "/env" {
		t.Errorf("env over file: %q", got)
	}
	if got := parse(t, "state = /file\n", "", "--state", "/flag").String("state"); got != "/flag" {
		t.Errorf("flag over env: %q", got)
	}
}

// TestAliases: a former name works as flag, variable and file key.
func TestAliases(t *testing.T) {
	if got := parse(t, "", "serve", "--mirror-every", "5s").Duration("replicate-every"); got != 5*time.Second {
		t.Errorf("--mirror-every: %s", got)
	}
	if got := parse(t, "mirror-every = 7s\n", "serve").Duration("replicate-every"); got != 7*time.Second {
		t.Errorf("mirror-every in the file: %s", got)
	}
	t.Setenv("COVMIRROR_MIRROR_EVERY", "9s")
	if got := parse(t, "", "serve").Duration("replicate-every"); got != 9*time.Second {
		t.Errorf("COVMIRROR_MIRROR_EVERY: %s", got)
	}
	t.Setenv("COVMIRROR_REPLICATE_EVERY", "11s")
	if got := parse(t, "", "serve").Duration("replicate-every"); got != 11*time.Second {
		t.Errorf("the current name over the former: %s", got)
	}
}

// TestMapsComeWhole: a map setting comes whole from one source, never
// merged entry by entry.
func TestMapsComeWhole(t *testing.T) {
	file := "source.a = stored\nsource.b = stored\n"
	if got := parse(t, file, "serve").Map("source"); len(got) != 2 {
		t.Errorf("file: %v", got)
	}
	if got := parse(t, file, "serve", "--source", "c=stored"); len(got.Map("source")) != 1 || got.Map("source")["c"] != "stored" {
		t.Errorf("flag: %v, want only c", got.Map("source"))
	}
	t.Setenv("COVMIRROR_SOURCES", "d=stored,e=broker-managed")
	if got := parse(t, file, "serve").Map("source"); len(got) != 2 || got["e"] != "broker-managed" {
		t.Errorf("env: %v, want d and e", got)
	}
}

// TestSecondValueRefused: a flag given twice is a mistake, and a secret's
// values are redacted in it.
func TestSecondValueRefused(t *testing.T) {
	table := []Setting{{Key: "postgres.url", Kind: Secret}}
	set := New(table, nil)
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	set.Register(fs, "")
	err := Parse(fs, []string{"--postgres-url", "postgres://u:one@h/db", "--postgres-url", "postgres://u:two@h/db"}, func(string) bool { return false })
	if err == nil || strings.Contains(err.Error(), "one") || strings.Contains(err.Error(), "two") || !strings.Contains(err.Error(), "given twice") {
		t.Fatalf("%v", err)
	}
}

// TestUnknownKey: a key not in the table names the line and the keys.
func TestUnknownKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.conf")
	_ = os.WriteFile(path, []byte("state = x\nstat = y\n"), 0o644)
	_, err := Load(path, testTable())
	if err == nil || !strings.Contains(err.Error(), `c.conf:2: unknown key "stat"`) || !strings.Contains(err.Error(), "source.NAME") {
		t.Fatalf("%v", err)
	}
}

// loadFile is the configuration file text read for table.
func loadFile(t *testing.T, table []Setting, text string) *File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.conf")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path, table)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func noRepeat(string) bool { return false }

// TestFormerNameGivenTwice: a setting given under its name and a former one
// is refused as a flag given twice, in the flags and in the file.
func TestFormerNameGivenTwice(t *testing.T) {
	set := New(testTable(), nil)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	set.Register(fs, "serve")
	if err := Parse(fs, []string{"--replicate-every", "0", "--mirror-every", "1s"}, noRepeat); err != nil {
		t.Fatal(err)
	}
	if err := set.Err(); err == nil || !strings.Contains(err.Error(), "give --replicate-every once") {
		t.Errorf("--replicate-every and --mirror-every: %v, want a refusal", err)
	}
	set = New(testTable(), loadFile(t, testTable(), "replicate-every = 1m\nmirror-every = 2m\n"))
	set.Register(flag.NewFlagSet("serve", flag.ContinueOnError), "serve")
	if err := set.Err(); err == nil || !strings.Contains(err.Error(), "the same setting") {
		t.Errorf("both names in the file: %v, want a refusal", err)
	}
}

// TestEmptyGivenIsNotTheDefault: a NonEmpty setting given as nothing, by
// flag or file, is refused rather than silently defaulted; given nowhere
// it takes its default; and a list's empty items outside a flag are
// skipped.
func TestEmptyGivenIsNotTheDefault(t *testing.T) {
	table := []Setting{{Key: "schema", NonEmpty: true, Default: "covmirror"}, {Key: "names", Kind: List}}
	set := New(table, nil)
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	set.Register(fs, "")
	if err := Parse(fs, []string{"--schema="}, noRepeat); err == nil {
		t.Error("--schema= was accepted")
	}
	set = New(table, loadFile(t, table, "schema =\nnames = a, b,\n"))
	set.Register(flag.NewFlagSet("x", flag.ContinueOnError), "")
	if err := set.Err(); err == nil || !strings.Contains(err.Error(), "schema is empty") {
		t.Errorf("schema = (empty) in the file: %v, want a refusal", err)
	}
	if got := set.List("names"); len(got) != 2 {
		t.Errorf("names = a, b, : %q, want a and b", got)
	}
	set = New(table, nil)
	set.Register(flag.NewFlagSet("x", flag.ContinueOnError), "")
	if err := set.Err(); err != nil || set.String("schema") != "covmirror" {
		t.Errorf("given nowhere: %q, %v, want the default", set.String("schema"), err)
	}
}

// TestLoggerRedacts: the logger the commands log through shows a
// credential an error, a string or a grouped attribute carries (a
// catalog's echo, a URL's password) redacted, in either format.
func TestLoggerRedacts(t *testing.T) {
	const secret = "Zq81fa77LoggedSecret"
	for _, format := range []string{"text", "json"} {
		var b strings.Builder
		l, err := NewLogger(&b, "info", format)
		if err != nil {
			t.Fatal(err)
		}
		l = l.With("uri", "postgres://u:"+secret+"@db/lake")
		l.Warn("catalog refused: Authorization: Bearer "+secret,
			"err", fmt.Errorf("wrapped: %w", errors.New(`{"Authorization":"Bearer `+secret+`"}`)),
			"answer", "password="+secret,
			slog.Group("req", "header", "Bearer "+secret))
		if !strings.Contains(b.String(), "catalog refused") {
			t.Fatalf("%s: nothing logged: %q", format, b.String())
		}
		if strings.Contains(b.String(), secret[:8]) {
			t.Errorf("%s: the secret is logged: %s", format, b.String())
		}
	}
}
