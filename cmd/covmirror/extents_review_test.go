package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"testing"
)

// errReader fails every read, as a broken pipe or a failing disk does.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, os.ErrDeadlineExceeded }

// TestAckedEndsUnreadableIsAFailure: --acked-ends documents a file that
// cannot be read as a failure (exit 1) and only invalid extents as a usage
// error (exit 2). A file that opens but cannot be read (a directory, an I/O
// error, standard input that breaks) exits 2, telling a script its command
// line is wrong when its disk or pipe is.
func TestAckedEndsUnreadableIsAFailure(t *testing.T) {
	state := t.TempDir()
	if _, err := runWithStdin(t, state, "", "checkpoint"); err != nil {
		t.Fatal(err)
	}
	_, err := runWithStdin(t, state, "", "plan", "--acked-ends", t.TempDir())
	if code := exitCode(err); code != 1 {
		t.Errorf("--acked-ends DIRECTORY: exit %d (%v), want 1", code, err)
	}
	var stdout, stderr bytes.Buffer
	g := &globals{stdout: &stdout, stderr: &stderr, stdin: errReader{}, props: map[string]string{}, logger: slog.New(slog.DiscardHandler)}
	err = run(context.Background(), g, []string{"--state", state, "--writer", "test", "gaps", "--acked-ends", "-"})
	if code := exitCode(err); code != 1 {
		t.Errorf("--acked-ends - with a failing standard input: exit %d (%v), want 1", code, err)
	}
}

// An explicit empty --acked-ends is a usage error, not "no extents".
func TestAckedEndsEmptyIsAUsageError(t *testing.T) {
	state := t.TempDir()
	if _, err := runWithStdin(t, state, "", "checkpoint"); err != nil {
		t.Fatal(err)
	}
	_, err := runWithStdin(t, state, "", "plan", "--acked-ends", "")
	if code := exitCode(err); code != 2 {
		t.Errorf("--acked-ends '': exit %d (%v), want 2", code, err)
	}
}
