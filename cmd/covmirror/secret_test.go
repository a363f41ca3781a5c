package main

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/internal/catalogtest"
)

// password is planted in every way a database URL reaches covmirror.
const password = "Pl4ntedS3cret"

// TestNoPasswordIsPrinted: a password in COVMIRROR_POSTGRES_URL, in
// postgres.url of the configuration file or in --postgres-url, as a URL's
// user password, a password= parameter or a key=value DSN's, shows in no
// output: the usage of every command, help, --help, a failing connect's
// error, the debug log, --json outputs, the printed SQL, a flag given
// twice.
func TestNoPasswordIsPrinted(t *testing.T) {
	u, err := pgx.ParseConfig(catalogtest.PostgresURL())
	if err != nil {
		t.Fatal(err)
	}
	working := "postgres://" + u.User + ":" + password + "@" + u.Host + ":" + strconv.Itoa(int(u.Port)) + "/" + u.Database + "?sslmode=disable"
	failing := []string{
		"postgres://u:" + password + "@127.0.0.1:1/test?sslmode=disable",
		"postgres://u@127.0.0.1:1/test?sslmode=disable&password=" + password,
		"host=127.0.0.1 port=1 user=u password=" + password + " dbname=test sslmode=disable",
		"host=127.0.0.1 port=1 user=u password='" + password + ` x\'\\"' dbname=test sslmode=disable`,
	}
	commandNames := []string{""}
	for name := range commands {
		commandNames = append(commandNames, name)
	}
	slices.Sort(commandNames)
	check := func(t *testing.T, what, text string) {
		t.Helper()
		if strings.Contains(text, password) {
			t.Errorf("%s printed the password:\n%s", what, text)
		}
	}
	type plant struct {
		name string
		// args are the global flags that plant url, after setting up the
		// environment or the file.
		args func(t *testing.T, url string) []string
	}
	plants := []plant{
		{"environment", func(t *testing.T, url string) []string {
			t.Setenv("COVMIRROR_POSTGRES_URL", url)
			return nil
		}},
		{"config file", func(t *testing.T, url string) []string {
			path := filepath.Join(t.TempDir(), "covmirror.conf")
			if err := os.WriteFile(path, []byte("postgres.url = "+url+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return []string{"--config", path}
		}},
		{"flag", func(t *testing.T, url string) []string { return []string{"--postgres-url", url} }},
	}
	for _, p := range plants {
		t.Run(p.name, func(t *testing.T) {
			for _, url := range failing {
				global := append(p.args(t, url), "--log-level", "debug", "--durable", "postgres")
				run := func(args ...string) {
					t.Helper()
					out, errOut, err := runCLI(t, t.TempDir(), append(slices.Clone(global), args...)...)
					text := out + errOut
					if err != nil {
						text += err.Error()
					}
					check(t, strings.Join(args, " "), text)
				}
				run()
				run("help")
				for _, name := range commandNames {
					if name == "" {
						run("--help")
					} else {
						run(name, "--help")
					}
				}
				for _, args := range [][]string{{"gaps", "--json"}, {"plan", "--json"}, {"checkpoint"}, {"query", "summary", "--json"}} {
					run(args...)
				}
				if p.name == "flag" {
					run("--postgres-url", url, "gaps") // given twice
				}
			}
			// Connected (the test server trusts, so the password is not
			// needed, only planted): --json output, the printed SQL.
			schema := catalogtest.Namespace()
			t.Cleanup(func() { dropSchema(t, schema) })
			global := append(p.args(t, working), "--log-level", "debug", "--durable", "postgres", "--postgres-schema", schema)
			state := t.TempDir()
			for _, args := range [][]string{
				{"record", "--sink", "raw", "--topic", "t", "--range", "0:9"},
				{"record", "--sink", "lake", "--topic", "t", "--range", "0:5"},
				{"checkpoint"},
				{"gaps", "--json"},
				{"plan", "--json"},
				{"query", "gaps", "--sql", "--dialect", "postgres"},
				{"query", "summary", "--json"},
			} {
				out, errOut, err := runCLI(t, state, append(slices.Clone(global), args...)...)
				if err != nil && !(args[0] == "query" && !haveDuckDB) {
					t.Fatalf("%s: %v\n%s", args, err, errOut)
				}
				check(t, strings.Join(args, " "), out+errOut)
			}
		})
	}
}

func dropSchema(t *testing.T, schema string) {
	ctx := context.Background() // in a cleanup, t.Context is done
	conn, err := pgx.Connect(ctx, catalogtest.PostgresURL())
	if err != nil {
		t.Error(err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		t.Errorf("drop schema %s: %v", schema, err)
	}
}
