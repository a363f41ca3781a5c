package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/recovery"
)

// reconcileEnv is a PostgreSQL sink table and a PostgreSQL durable tier,
// each in a fresh schema, and a configuration file whose checker reads the
// sink's DSN from the environment.
type reconcileEnv struct {
	conn   *pgx.Conn
	table  string // "schema".sink
	global []string
	conf   string
}

func newReconcileEnv(t *testing.T) *reconcileEnv {
	t.Helper()
	url := catalogtest.PostgresURL()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	sinkSchema, tierSchema := catalogtest.Namespace(), catalogtest.Namespace()
	t.Cleanup(func() {
		for _, s := range []string{sinkSchema, tierSchema} {
			_, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{s}.Sanitize()+" CASCADE")
		}
	})
	e := &reconcileEnv{conn: conn, table: pgx.Identifier{sinkSchema, "sink"}.Sanitize()}
	e.exec(t, "CREATE SCHEMA "+pgx.Identifier{sinkSchema}.Sanitize())
	e.exec(t, "CREATE TABLE "+e.table+" (topic text NOT NULL, part int NOT NULL, batch_id bigint NOT NULL)")
	dir := t.TempDir()
	e.conf = filepath.Join(dir, "covmirror.conf")
	conf := fmt.Sprintf(`# the sink's DSN comes from the environment
reconcile.pgsink.kind = sql
reconcile.pgsink.driver = pgx
reconcile.pgsink.dsn-env = COVMIRROR_TEST_SINK_DSN
reconcile.pgsink.query = SELECT batch_id FROM %s WHERE topic = $1 AND part = $2 AND batch_id >= $3 AND batch_id < $4
reconcile.pgsink.timeout = 20s
`, e.table)
	if err := os.WriteFile(e.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("COVMIRROR_TEST_SINK_DSN", url)
	e.global = []string{"--config", e.conf, "--state", filepath.Join(dir, "state"), "--writer", "test",
		"--durable", "postgres", "--postgres-url", url, "--postgres-schema", tierSchema}
	return e
}

func (e *reconcileEnv) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	if _, err := e.conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

// run runs covmirror with the environment's global flags.
func (e *reconcileEnv) run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut strings.Builder
	err = Run(context.Background(), append(slices.Clone(e.global), args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

// write puts batches [start, end) of partition p into the sink table and
// records them, as a pipeline does after the sink's acknowledgement.
func (e *reconcileEnv) write(t *testing.T, p, start, end int) {
	t.Helper()
	for id := start; id < end; id++ {
		e.exec(t, "INSERT INTO "+e.table+" VALUES ('t', $1, $2)", p, id)
	}
	for _, sink := range []string{"raw", "pgsink"} {
		if _, errOut, err := e.run(t, "record", "--sink", sink, "--topic", "t", "--partition", fmt.Sprint(p), "--range", fmt.Sprintf("%d:%d", start, end)); err != nil {
			t.Fatalf("record: %v\n%s", err, errOut)
		}
	}
}

var absentLine = regexp.MustCompile(`(?m)^pgsink/t/(\d+) \[(\d+),(\d+)\) claimed but absent`)

func absentIn(out string) []string {
	var rows []string
	for _, m := range absentLine.FindAllStringSubmatch(out, -1) {
		rows = append(rows, fmt.Sprintf("%s:[%s,%s)", m[1], m[2], m[3]))
	}
	return rows
}

// TestReconcileEndToEnd: rows deleted from a PostgreSQL sink table after
// their coverage was committed are reported exactly, in full and sampled
// (a seed repeats its sample), exit status 1; --tasks hands them to the
// recovery worker as plan --json does; once replayed, reconcile exits 0.
func TestReconcileEndToEnd(t *testing.T) {
	e := newReconcileEnv(t)
	for _, w := range [][3]int{{0, 0, 10}, {0, 20, 30}, {0, 40, 50}, {1, 0, 10}} {
		e.write(t, w[0], w[1], w[2])
	}
	if _, errOut, err := e.run(t, "checkpoint"); err != nil {
		t.Fatalf("checkpoint: %v\n%s", err, errOut)
	}
	out, _, err := e.run(t, "reconcile")
	if err != nil || len(absentIn(out)) != 0 || !strings.Contains(out, "no claimed-absent batches") {
		t.Fatalf("before any loss: %v\n%s", err, out)
	}
	for _, d := range [][2]int{{0, 3}, {0, 4}, {0, 22}, {0, 45}, {0, 46}, {0, 47}, {0, 48}, {0, 49}, {1, 7}} {
		e.exec(t, "DELETE FROM "+e.table+" WHERE part = $1 AND batch_id = $2", d[0], d[1])
	}
	want := []string{"0:[3,5)", "0:[22,23)", "0:[45,50)", "1:[7,8)"}
	if os.Getenv("PEEK") != "" {
		for _, a := range [][]string{{"reconcile"}, {"reconcile", "--sample", "1", "--seed", "3", "--max-batches-per-check", "100"}, {"reconcile", "--tasks"}, {"reconcile", "--json"}} {
			o, eo, err := e.run(t, a...)
			t.Logf("%v:\n%s--stderr:\n%s--err: %v", a, o, eo, err)
		}
	}

	out, _, err = e.run(t, "reconcile")
	if exitCode(err) != 1 || !strings.Contains(err.Error(), `4 ranges (9 batches) of the sinks "pgsink"`) || !slices.Equal(absentIn(out), want) {
		t.Fatalf("full: exit %d (%v), rows %v, want %v\n%s", exitCode(err), err, absentIn(out), want, out)
	}

	// Sampled, one committed range per piece: each reported row is a whole
	// deleted range, and the printed seed asks the same ranges again.
	for seed := 1; seed <= 6; seed++ {
		args := []string{"reconcile", "--sample", "1", "--seed", fmt.Sprint(seed), "--max-batches-per-check", "100"}
		out, _, err := e.run(t, args...)
		got := absentIn(out)
		for _, r := range got {
			if !slices.Contains(want, r) {
				t.Fatalf("seed %d: %s was not deleted\n%s", seed, r, out)
			}
		}
		if (len(got) > 0) != (exitCode(err) == 1) || !strings.Contains(out, fmt.Sprintf("--seed %d --sample 1", seed)) {
			t.Fatalf("seed %d: exit %d with rows %v, or no seed printed\n%s", seed, exitCode(err), got, out)
		}
		again, _, _ := e.run(t, args...)
		if !slices.Equal(absentIn(again), got) {
			t.Fatalf("seed %d asked other ranges the second time: %v, then %v", seed, got, absentIn(again))
		}
	}
	out, _, _ = e.run(t, "reconcile", "--sample", "3", "--max-batches-per-check", "100")
	if !slices.Equal(absentIn(out), want) {
		t.Fatalf("a sample of every range: %v, want %v\n%s", absentIn(out), want, out)
	}

	// --json: one line, the rows in the gaps' shape.
	out, _, err = e.run(t, "reconcile", "--json")
	var line struct {
		Seed   uint64         `json:"seed"`
		Absent []recovery.Gap `json:"absent"`
	}
	if exitCode(err) != 1 || strings.Count(out, "\n") != 1 || json.Unmarshal([]byte(out), &line) != nil || len(line.Absent) != 4 ||
		line.Absent[0] != (recovery.Gap{Sink: "pgsink", Topic: "t", Partition: 0, Start: 3, End: 5, Kind: "claimed-absent"}) || line.Seed == 0 {
		t.Fatalf("--json: exit %d, %q", exitCode(err), out)
	}

	// --tasks: what the recovery worker takes; replay them (write the rows
	// back and record them) and reconcile is clean.
	out, errOut, err := e.run(t, "reconcile", "--tasks")
	var tasks []recovery.Gap
	if exitCode(err) != 1 || json.Unmarshal([]byte(out), &tasks) != nil || len(tasks) != 4 || !strings.Contains(errOut, "full check: no sample") {
		t.Fatalf("--tasks: exit %d, %q\n%s", exitCode(err), out, errOut)
	}
	for _, task := range tasks {
		if task.Kind != recovery.KindReplay || task.Sink != "pgsink" {
			t.Fatalf("task %+v: want a replay of pgsink", task)
		}
		e.write(t, int(task.Partition), int(task.Start), int(task.End))
	}
	if _, errOut, err := e.run(t, "checkpoint"); err != nil {
		t.Fatalf("checkpoint: %v\n%s", err, errOut)
	}
	if out, _, err := e.run(t, "reconcile"); err != nil || len(absentIn(out)) != 0 {
		t.Fatalf("after the replay: %v\n%s", err, out)
	}
}

// TestReconcileScheduledMetrics: reconcile --every serves /metrics on
// loopback, and a scrape after a run shows the deleted batches.
func TestReconcileScheduledMetrics(t *testing.T) {
	e := newReconcileEnv(t)
	e.write(t, 0, 0, 10)
	if _, errOut, err := e.run(t, "checkpoint"); err != nil {
		t.Fatalf("checkpoint: %v\n%s", err, errOut)
	}
	e.exec(t, "DELETE FROM "+e.table+" WHERE batch_id IN (2, 3)")
	ctx, cancel := context.WithCancel(context.Background())
	var out logtest.Buffer
	done := make(chan error)
	go func() {
		done <- Run(ctx, append(slices.Clone(e.global), "reconcile", "--every", "1h", "--metrics-addr", "127.0.0.1:0"), &out, io.Discard)
	}()
	addr := regexp.MustCompile(`serving http://(\S+)/metrics`)
	var body string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		m := addr.FindStringSubmatch(out.String())
		if m == nil || !strings.Contains(out.String(), "claimed but absent") {
			continue
		}
		resp, err := http.Get("http://" + m[1] + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		break
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("scheduled reconcile after cancel: %v", err)
	}
	for _, want := range []string{`covmirror_reconcile_claimed_absent_batches{sink="pgsink"} 2`, "covmirror_reconcile_runs_total 1", "covmirror_reconcile_interval_seconds 3600"} {
		if !strings.Contains(body, want+"\n") {
			t.Fatalf("the scrape has no %q:\n%s\n(output %s)", want, body, out.String())
		}
	}
}

// TestReconcileHostileConfig: a credential in the file, an unknown key, a
// checker of an unknown kind and an unset variable are each refused with
// exit status 2, naming the key, never repeating the credential; a non-
// loopback metrics address without a token is refused.
func TestReconcileHostileConfig(t *testing.T) {
	const pw = "Hq7-do-not-print"
	dir := t.TempDir()
	for _, c := range []struct{ conf, want string }{
		{"reconcile.s.kind = sql\nreconcile.s.dsn = postgres://u:" + pw + "@h/db\n", "c.conf:2: reconcile.s.dsn: a credential is never written in the configuration"},
		{"reconcile.s.kind = http\nreconcile.s.token = " + pw + "\n", "reconcile.s.token-env"},
		{"reconcile.s.kind = sql\nreconcile.s.qury = x\n", `c.conf:2: reconcile.s.qury: unknown key "qury"`},
		{"reconcile.s.kind = ftp\n", `reconcile.s.kind: kind "ftp" is not sql, http or iceberg`},
		{"reconcile.s.kind = sql\nreconcile.s.driver = pgx\nreconcile.s.query = SELECT 1\n", "reconcile.s.dsn-env is missing"},
		{"reconcile.s.kind = sql\nreconcile.s.driver = pgx\nreconcile.s.query = SELECT 1\nreconcile.s.dsn-env = COVMIRROR_TEST_UNSET_DSN\n", `"COVMIRROR_TEST_UNSET_DSN", which is unset or empty`},
		{"state = x\n", "no checker is configured"},
	} {
		path := filepath.Join(dir, "c.conf")
		if err := os.WriteFile(path, []byte(c.conf), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := runCLI(t, t.TempDir(), "--config", path, "reconcile")
		if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%q: exit %d, %v; want 2 and %q", c.conf, exitCode(err), err, c.want)
		}
		if strings.Contains(out+errOut+err.Error(), pw) {
			t.Fatalf("%q: the credential is shown: %v\n%s%s", c.conf, err, out, errOut)
		}
	}
	_, _, err := runCLI(t, t.TempDir(), "reconcile", "--checker", "s.kind=http", "--checker", "s.url=http://127.0.0.1:1/x", "--every", "1h", "--metrics-addr", "0.0.0.0:0")
	if exitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "reachable from other hosts") {
		t.Fatalf("a metrics address others reach, without a token: exit %d, %v", exitCode(err), err)
	}
	for _, args := range [][]string{{"--json", "--tasks"}, {"--metrics-addr", "127.0.0.1:0"}, {"--sample", "-1"}, {"--partition", "-3"}} {
		_, _, err := runCLI(t, t.TempDir(), append([]string{"reconcile", "--checker", "s.kind=http", "--checker", "s.url=http://127.0.0.1:1/x"}, args...)...)
		if exitCode(err) != 2 {
			t.Fatalf("reconcile %v: exit %d (%v), want 2", args, exitCode(err), err)
		}
	}
}
