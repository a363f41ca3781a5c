package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
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
	g := &globals{stdout: &stdout, stderr: &stderr, stdin: errReader{}, logger: slog.New(slog.DiscardHandler)}
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

// TestPlanSinksNamesATopicsSinks: payments/0 has rows of raw only (the
// lake's were lost), so only --sinks tells plan and gaps the lake writes
// payments; the lake's gap there appears with it, never without.
func TestPlanSinksNamesATopicsSinks(t *testing.T) {
	state := t.TempDir()
	for _, args := range [][]string{
		{"record", "--sink", "raw", "--topic", "payments", "--partition", "0", "--range", "0:20"},
		{"record", "--sink", "raw", "--topic", "orders", "--partition", "0", "--range", "0:20"},
		{"record", "--sink", "lake", "--topic", "orders", "--partition", "0", "--range", "0:20"},
		{"checkpoint"},
	} {
		if _, err := runWithStdin(t, state, "", args...); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	const lake = `{"sink":"lake","topic":"payments","partition":0,"start":0,"end":20,"kind":"replay"}`
	for _, cmd := range []string{"plan", "gaps"} {
		for _, c := range []struct {
			args []string
			want bool
		}{{nil, false}, {[]string{"--sinks", "lake,warehouse"}, true}} {
			out, err := runWithStdin(t, state, "", append([]string{cmd, "--json"}, c.args...)...)
			if err != nil {
				t.Fatalf("%s %v: %v", cmd, c.args, err)
			}
			if got := strings.Contains(out, lake); got != c.want {
				t.Errorf("%s %v: %s; holds the lake's payments replay: %v, want %v", cmd, c.args, out, got, c.want)
			}
		}
	}
	if _, err := runWithStdin(t, state, "", "plan", "--sinks", "lake,,x"); exitCode(err) != 2 {
		t.Errorf("--sinks lake,,x: %v (exit %d), want a usage error", err, exitCode(err))
	}
}
