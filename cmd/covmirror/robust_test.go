package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/logtest"
)

// run runs a command line on state, returning stdout, stderr and the error.
func runCLI(t *testing.T, state string, args ...string) (string, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := Run(context.Background(), append([]string{"--state", state, "--writer", "test"}, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

func mustRun(t *testing.T, state string, args ...string) string {
	t.Helper()
	out, errOut, err := runCLI(t, state, args...)
	if err != nil {
		t.Fatalf("covmirror %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// TestFlagErrorsAreReportedOnce: the flag package prints a bad flag's error
// and the usage itself; main prints the returned error too. Only the
// returned error may say it.
func TestFlagErrorsAreReportedOnce(t *testing.T) {
	for _, args := range [][]string{
		{"record", "--bogus"},
		{"--bogus", "version"},
		{"record", "--sink", "a", "--sink", "b", "--topic", "t", "--range", "1:2"},
		{"compact", "--every", "soon"},
	} {
		out, errOut, err := runCLI(t, t.TempDir(), args...)
		if exitCode(err) != 2 || out != "" || errOut != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q (want exit 2 and only the returned error %v)", args, exitCode(err), out, errOut, err)
		}
	}
	// --help still prints the usage, and exits 0.
	_, errOut, err := runCLI(t, t.TempDir(), "record", "--help")
	if exitCode(err) != 0 || !strings.Contains(errOut, "usage: covmirror record") {
		t.Fatalf("record --help: %v, %q", err, errOut)
	}
}

// TestPanicIsABug: a panic in a command is exit status 1 with a message
// saying it is a bug; the stack goes to the debug log only.
func TestPanicIsABug(t *testing.T) {
	commands["test-panic"] = command{"panics", func(_ context.Context, _ *globals, args []string) error {
		_ = args[len(args)] // a runtime panic, as a bug would be
		return nil
	}}
	defer delete(commands, "test-panic")
	out, errOut, err := runCLI(t, t.TempDir(), "test-panic")
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "a bug in covmirror") || !strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("a panicking command: exit %d, %v", exitCode(err), err)
	}
	if out != "" || strings.Contains(errOut, "goroutine") {
		t.Fatalf("a stack trace outside the debug log: stdout %q stderr %q", out, errOut)
	}
	_, errOut, _ = runCLI(t, t.TempDir(), "--log-level", "debug", "test-panic")
	if !strings.Contains(errOut, "goroutine") || !strings.Contains(errOut, "robust_test.go") {
		t.Fatalf("--log-level debug lacks the stack: %q", errOut)
	}
}

// TestStatePathWithURLCharacters: a state directory named with #, ?, % and
// a space holds the local tier, the catalog and the warehouse; nothing
// lands beside it (the DSN and warehouse URL were once concatenated, so
// SQLite and iceberg-go read a shorter or decoded path).
func TestStatePathWithURLCharacters(t *testing.T) {
	parent := t.TempDir()
	state := filepath.Join(parent, "st#a?b%41c d")
	mustRun(t, state, "record", "--sink", "raw", "--topic", "t", "--range", "1:9")
	mustRun(t, state, "record", "--sink", "lake", "--topic", "t", "--range", "1:5")
	mustRun(t, state, "checkpoint")
	if got := strings.TrimSpace(mustRun(t, state, "gaps", "--json")); got != `[{"sink":"lake","topic":"t","partition":0,"start":5,"end":9,"kind":"replay"}]` {
		t.Fatalf("gaps after a checkpoint: %s", got)
	}
	entries, _ := os.ReadDir(parent)
	for _, e := range entries {
		if e.Name() != filepath.Base(state) {
			t.Errorf("%s was created outside the state directory", filepath.Join(parent, e.Name()))
		}
	}
	var parquet int
	_ = filepath.WalkDir(filepath.Join(state, "warehouse"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".parquet") {
			parquet++
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(state, "catalog.db")); err != nil || parquet == 0 {
		t.Fatalf("catalog %v, %d data files under the state directory's warehouse", err, parquet)
	}
}

// TestObjectStateWithURLCharacters: with --durable object, the sink
// objects' default URL under --state holds the directory's name as it is:
// a %41 in it is not an A (which put the objects in another directory,
// another deployment's if it existed), and a # or ? does not end the path
// (which made every checkpoint fail).
func TestObjectStateWithURLCharacters(t *testing.T) {
	for _, name := range []string{"st%41", "st#a", "st?b", "st#a?b%41c d"} {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			state := filepath.Join(parent, name)
			mustRun(t, state, "--durable", "object", "record", "--sink", "raw", "--topic", "t", "--range", "1:9")
			mustRun(t, state, "--durable", "object", "record", "--sink", "lake", "--topic", "t", "--range", "1:5")
			mustRun(t, state, "--durable", "object", "checkpoint")
			if got := strings.TrimSpace(mustRun(t, state, "--durable", "object", "gaps", "--json")); got != `[{"sink":"lake","topic":"t","partition":0,"start":5,"end":9,"kind":"replay"}]` {
				t.Fatalf("gaps after a checkpoint: %s", got)
			}
			if entries, err := os.ReadDir(filepath.Join(state, "objects", "sinks")); err != nil || len(entries) != 2 {
				t.Fatalf("sink objects under the state directory: %v, %v; want raw and lake", entries, err)
			}
			entries, _ := os.ReadDir(parent)
			for _, e := range entries {
				if e.Name() != filepath.Base(state) {
					t.Errorf("%s was created outside the state directory", filepath.Join(parent, e.Name()))
				}
			}
		})
	}
}

// TestConfigInlineComments: " # ..." after a value is a comment, not part
// of the value (internal/settings tests the cut itself).
func TestConfigInlineComments(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	conf := filepath.Join(dir, "covmirror.conf")
	text := "state = " + state + "   # the local tier: the pod's own disk, never shared\nlog.level = debug # chatty\n"
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := Run(context.Background(), []string{"--config", conf, "record", "--sink", "raw", "--topic", "t", "--range", "1:2"}, &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 2 || names[1] != "state" {
		t.Fatalf("the configuration file's state directory: got %q in %s", names, dir)
	}
	if _, err := os.Stat(filepath.Join(state, "local")); err != nil {
		t.Fatal(err)
	}
}

// TestConfigKeyGivenTwice: a key given twice in the file is a usage error
// naming both lines, never "the last line wins"; a directory given as the
// file says so.
func TestConfigKeyGivenTwice(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "covmirror.conf")
	if err := os.WriteFile(conf, []byte("state = "+dir+"/a\n# a comment\nstate = "+dir+"/b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, want string }{
		{conf, `covmirror.conf:3: key "state" is given again (first on line 1): give it once`},
		{dir, "is a directory, not a file of key = value lines"},
	} {
		var out, errOut bytes.Buffer
		err := Run(context.Background(), []string{"--config", c.path, "version"}, &out, &errOut)
		if exitCode(err) != 2 || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("--config %s: exit %d, %v; want exit 2 saying %q", c.path, exitCode(err), err, c.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("a refused configuration created %v", entries)
	}
}

// breakWarehouse makes the table's data directory refuse new files: a
// regular file in its place (chmod would not stop root).
func breakWarehouse(t *testing.T, state string) string {
	t.Helper()
	data := filepath.Join(state, "warehouse", "covmirror.db", "coverage", "data")
	if err := os.Rename(data, data+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(data, []byte("not a directory"), 0o444); err != nil {
		t.Fatal(err)
	}
	return data
}

// TestUnwritableWarehouseNamesThePath: the writer may report only that no
// data file came out; the command names the directory and the cause.
func TestUnwritableWarehouseNamesThePath(t *testing.T) {
	state := t.TempDir()
	mustRun(t, state, "record", "--sink", "raw", "--topic", "t", "--range", "1:5")
	mustRun(t, state, "checkpoint")
	data := breakWarehouse(t, state)
	mustRun(t, state, "record", "--sink", "raw", "--topic", "t", "--range", "5:9")
	out, _, err := runCLI(t, state, "checkpoint")
	if exitCode(err) != 1 || out != "" {
		t.Fatalf("checkpoint into an unwritable warehouse: exit %d, %q, %v", exitCode(err), out, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "the warehouse directory "+data+" refuses new files") || !strings.Contains(msg, "not a directory") {
		t.Fatalf("the error does not name the directory and the cause: %v", err)
	}
	if n := strings.Count(err.Error(), "refuses new files"); n != 1 {
		t.Fatalf("the failure is reported %d times: %v", n, err)
	}
	// Nothing was lost: the range is still pending.
	if got := mustRun(t, state, "inspect"); !strings.Contains(got, "4 batches pending") {
		t.Fatalf("after the failed checkpoint: %s", got)
	}
}

// TestServeLogsAFailedCheckpoint: serve's checkpoint loop logs each failure
// to stderr (once discarded: the binary set no logger), in the format asked.
func TestServeLogsAFailedCheckpoint(t *testing.T) {
	state := t.TempDir()
	mustRun(t, state, "record", "--sink", "raw", "--topic", "t", "--range", "1:5")
	mustRun(t, state, "checkpoint")
	breakWarehouse(t, state)
	mustRun(t, state, "record", "--sink", "raw", "--topic", "t", "--range", "5:9")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errOut logtest.Buffer
	done := make(chan error)
	go func() {
		done <- Run(ctx, []string{"--state", state, "--writer", "test", "--log-format", "json", "serve", "--addr", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0", "--interval", "50ms"}, io.Discard, &errOut)
	}()
	const msg = "coverage checkpoint failed"
	for deadline := time.Now().Add(time.Minute); !strings.Contains(errOut.String(), msg) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	err := <-done
	var rec map[string]any
	for _, line := range strings.Split(errOut.String(), "\n") {
		if strings.Contains(line, msg) {
			_ = json.Unmarshal([]byte(line), &rec)
			break
		}
	}
	if m, _ := rec["msg"].(string); !strings.HasPrefix(m, msg) || rec["level"] != "ERROR" {
		t.Fatalf("stderr lacks a JSON log line of the failed checkpoint:\n%s", errOut.String())
	}
	if err == nil || !strings.Contains(err.Error(), "refuses new files") {
		t.Fatalf("serve's final checkpoint into an unwritable warehouse: %v", err)
	}
	if errors.Is(err, context.Canceled) {
		t.Fatalf("serve reported its own stop as the error: %v", err)
	}
}

// TestLocalTierFailuresExit1: a local tier that cannot be used (garbage
// where the store should be, a file where its directory should be) is exit
// status 1 with the store's own message, from every command that opens it.
func TestLocalTierFailuresExit1(t *testing.T) {
	garbage := t.TempDir()
	if err := os.MkdirAll(filepath.Join(garbage, "local"), 0o755); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(garbage, "local", "CURRENT"), []byte("garbage\n"), 0o644)
	notDir := t.TempDir()
	_ = os.WriteFile(filepath.Join(notDir, "local"), []byte("x"), 0o644)
	for state, want := range map[string]string{garbage: "corrupt", notDir: "not a directory"} {
		for _, args := range [][]string{{"record", "--sink", "raw", "--topic", "t", "--range", "1:2"}, {"inspect"}, {"checkpoint"}} {
			out, _, err := runCLI(t, state, args...)
			if exitCode(err) != 1 || out != "" || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "a bug") {
				t.Errorf("%s on %s: exit %d, %q, %v (want exit 1 and %q)", args[0], state, exitCode(err), out, err, want)
			}
		}
	}
}
