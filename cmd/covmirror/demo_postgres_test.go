package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/internal/catalogtest"
)

// TestDemoPostgres runs the demo with the coverage rows in PostgreSQL as
// the durable tier: the verdict holds, the run writes into a fresh schema
// of its own, and the story is the coverage table demo's, line for line.
// Then the commands read that schema: gaps, the DuckDB queries, and the
// PostgreSQL form printed for psql, run in the database.
func TestDemoPostgres(t *testing.T) {
	url := catalogtest.PostgresURL()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	defer conn.Close(context.Background())
	state := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		all := append([]string{"--state", state, "--writer", "test", "--durable", "postgres", "--postgres-url", url}, args...)
		if err := Run(context.Background(), all, &out, &errOut); err != nil {
			t.Fatalf("%s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String()
	}
	text := run("demo", "--seed", "3", "--batches", "200")
	schema := regexp.MustCompile(`covmirror_demo_[a-z0-9]+`).FindString(text)
	if schema == "" {
		t.Fatalf("the demo names no schema of its own:\n%s", text)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	})
	_, afterRecovery, _ := strings.Cut(text, "\n5. ")
	if !strings.Contains(text, "Verdict") || !strings.Contains(afterRecovery, "(no rows)") ||
		!strings.Contains(text, " --durable postgres --postgres-url ") || !strings.Contains(text, " --postgres-schema "+schema+" gaps\n") {
		t.Fatalf("no verdict, gaps left, or no way to look:\n%s", text)
	}
	table := demoText(t, t.TempDir(), "3")
	if got, want := story(text), story(table); got != want {
		t.Fatalf("the postgres demo's story differs from the table's:\n--- postgres\n%s--- table\n%s", got, want)
	}
	at := []string{"--postgres-schema", schema}
	if out := run(append(at, "gaps")...); !strings.Contains(out, "no gaps") {
		t.Fatalf("gaps after the demo's recovery: %s", out)
	}
	summary := run(append(at, "query", "summary", "--csv")...)
	if !strings.HasPrefix(summary, "sink,ranges,covered_batches,gaps,missing_batches") || strings.Count(summary, "\n") != 5 {
		t.Fatalf("summary over the rows:\n%s", summary)
	}
	printed := run(append(at, "query", "summary", "--sql", "--dialect", "postgres")...)
	rows, err := conn.Query(context.Background(), printed)
	if err != nil {
		t.Fatalf("the printed PostgreSQL form does not run: %v\n%s", err, printed)
	}
	n := 0
	for rows.Next() {
		n++
	}
	if rows.Close(); rows.Err() != nil || n != 4 {
		t.Fatalf("the printed form gave %d rows (%v), want raw and three sinks", n, rows.Err())
	}
	var out, errOut bytes.Buffer
	err = Run(context.Background(), []string{"--state", state, "--durable", "postgres", "gaps"}, &out, &errOut)
	if exitCode(err) != 2 || !strings.Contains(err.Error(), "--postgres-url") {
		t.Fatalf("postgres without a URL: %v, want a usage error naming --postgres-url", err)
	}
}

// demoText runs the coverage table demo in state with seed.
func demoText(t *testing.T, state, seed string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), []string{"--state", state, "--writer", "test", "demo", "--seed", seed, "--batches", "200"}, &out, &errOut); err != nil {
		t.Fatalf("demo: %v\n%s", err, errOut.String())
	}
	return out.String()
}
