package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/recovery"
)

// runWithStdin runs a command line with stdin as its standard input.
func runWithStdin(t *testing.T, state, stdin string, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	g := &globals{stdout: &stdout, stderr: &stderr, stdin: strings.NewReader(stdin), logger: slog.New(slog.DiscardHandler)}
	err := run(context.Background(), g, append([]string{"--state", state, "--writer", "test"}, args...))
	return stdout.String(), err
}

// TestPlanAckedEndsFromStdin runs the recovery loop a pipeline runs, with
// the acked extents on standard input (--acked-ends -): the first stretch
// of orders/0 lost on every tier is found, verified, replayed and closed,
// and the plan ends empty.
func TestPlanAckedEndsFromStdin(t *testing.T) {
	state := t.TempDir()
	must := func(stdin string, args ...string) string {
		t.Helper()
		out, err := runWithStdin(t, state, stdin, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return out
	}
	must("", "record", "--sink", "raw", "--topic", "orders", "--partition", "0", "--range", "10:20")
	must("", "record", "--sink", "lake", "--topic", "orders", "--partition", "0", "--range", "10:20")
	must("", "checkpoint")
	const acked = `[{"topic":"orders","partition":0,"end":20}]`
	var kinds []recovery.TaskKind
	for round := 0; ; round++ {
		var tasks []recovery.Gap
		if err := json.Unmarshal([]byte(must(acked, "plan", "--json", "--acked-ends", "-")), &tasks); err != nil {
			t.Fatal(err)
		}
		if len(tasks) == 0 {
			break
		}
		if round == 5 {
			t.Fatalf("the plan never empties: %+v", tasks)
		}
		for _, task := range tasks {
			if task.Start != 0 || task.End != 10 {
				t.Fatalf("task %+v, want [0,10)", task)
			}
			kinds = append(kinds, task.Kind)
			// raw holds 0..9 (the source acked them), and a replay into
			// the lake is acked: record what was verified or written.
			must("", "record", "--sink", task.Sink, "--topic", task.Topic, "--partition", "0", "--range", "0:10")
		}
		must("", "checkpoint")
	}
	if want := []recovery.TaskKind{recovery.KindVerifyReference, recovery.KindReplay}; len(kinds) != 2 || kinds[0] != want[0] || kinds[1] != want[1] {
		t.Fatalf("tasks of kinds %v, want %v", kinds, want)
	}
	if _, err := runWithStdin(t, state, `[{"topic":"orders","end":"20"}]`, "gaps", "--acked-ends", "-"); exitCode(err) != 2 {
		t.Fatalf("a malformed extent on stdin: %v (exit %d), want a usage error", err, exitCode(err))
	}
}

// TestDeclaredStarts: a configuration file's start.TOPIC declares where a
// stream begins, so an extent without a start looks for raw's holes from
// there, not from 0; --stream-start overrides the file; a bad or repeated
// start is a usage error.
func TestDeclaredStarts(t *testing.T) {
	state, dir := t.TempDir(), t.TempDir()
	conf := filepath.Join(dir, "covmirror.conf")
	if err := os.WriteFile(conf, []byte("start.orders = 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sink := range []string{"raw", "lake"} {
		if _, err := runWithStdin(t, state, "", "record", "--sink", sink, "--topic", "orders", "--partition", "0", "--range", "10:20"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := runWithStdin(t, state, "", "checkpoint"); err != nil {
		t.Fatal(err)
	}
	const acked = `[{"topic":"orders","partition":0,"end":20}]`
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--config", conf}, "[]\n"},
		{[]string{"--config", conf, "--stream-start", "orders=5"}, `[{"sink":"raw","topic":"orders","partition":0,"start":5,"end":10,"kind":"verify-reference"}]` + "\n"},
		{nil, `[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":10,"kind":"verify-reference"}]` + "\n"},
	} {
		out, err := runWithStdin(t, state, acked, append(c.args, "gaps", "--json", "--acked-ends", "-")...)
		if err != nil || out != c.want {
			t.Fatalf("%v: %q %v, want %q", c.args, out, err, c.want)
		}
	}
	for _, args := range [][]string{{"--stream-start", "orders=1", "--stream-start", "orders=2"}, {"--stream-start", "orders"}, {"--stream-start", "=3"}} {
		if _, err := runWithStdin(t, state, acked, append(args, "plan")...); exitCode(err) != 2 {
			t.Fatalf("%v: %v, want a usage error", args, err)
		}
	}
	if err := os.WriteFile(conf, []byte("start.orders = -1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runWithStdin(t, state, acked, "--config", conf, "plan"); exitCode(err) != 2 || !strings.Contains(err.Error(), ":1:") {
		t.Fatalf("a negative start in the file: %v, want a usage error naming the line", err)
	}
}
