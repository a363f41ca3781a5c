package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestGlobalFlagsAfterTheCommand: covmirror gaps --state DIR works as
// covmirror --state DIR gaps (it said "flag provided but not defined:
// -state"); a global flag given on both sides of the command is given
// twice, a usage error.
func TestGlobalFlagsAfterTheCommand(t *testing.T) {
	state := t.TempDir()
	cli := func(args ...string) (string, error) {
		var out, errOut bytes.Buffer
		err := Run(context.Background(), args, &out, &errOut)
		return out.String(), err
	}
	if out, err := cli("record", "--sink", "raw", "--topic", "orders", "--range", "0:5", "--state", state, "--writer", "test"); err != nil || !strings.Contains(out, "recorded raw/orders/0 [0,5)") {
		t.Fatalf("record --state DIR: %v %s", err, out)
	}
	if out, err := cli("record", "--state="+state, "--sink", "lake", "--topic", "orders", "--range", "0:2", "--writer=test", "--log-level", "warn"); err != nil || !strings.Contains(out, "recorded") {
		t.Fatalf("record --state=DIR: %v %s", err, out)
	}
	if out, err := cli("checkpoint", "--state", state, "--writer", "test"); err != nil || !strings.Contains(out, "checkpointed 7 batches") {
		t.Fatalf("checkpoint --state DIR: %v %s", err, out)
	}
	out, err := cli("gaps", "--state", state, "--exit-code")
	if exitCode(err) != 3 || !strings.Contains(out, "lake/orders/0 [2,5) missing 3 batches") {
		t.Fatalf("gaps --state DIR: exit %d %v %s", exitCode(err), err, out)
	}
	if _, err := cli("--state", state, "gaps", "--state", state); exitCode(err) != 2 || !strings.Contains(err.Error(), "state") {
		t.Fatalf("--state on both sides: %v, want a usage error naming it", err)
	}
	if _, err := cli("gaps", "--state", state, "--durable", "bogus"); exitCode(err) != 2 || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("gaps --durable bogus: %v, want the global flag's usage error", err)
	}
	if _, err := cli("gaps", "--state", state, "--nosuch"); exitCode(err) != 2 || !strings.Contains(err.Error(), "nosuch") {
		t.Fatalf("an unknown flag: %v", err)
	}
}
