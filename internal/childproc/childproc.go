// Package childproc lets a test run its own test binary again as a child
// process in a named role: a second OS process for concurrency tests, or
// one to SIGKILL at a random moment for crash tests. It is for tests only.
//
// The invariant it serves: a crash test only counts if the child really died
// of SIGKILL mid-work, so Kill fails the test when the child had already
// ended on its own.
package childproc

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

const roleEnv = "COVMIRROR_TEST_CHILD_ROLE"

// Main is a TestMain body. In a child started by Start it runs the named
// role and exits: 0 when the role returned nil, 3 otherwise. In the parent
// it runs the tests.
func Main(m *testing.M, roles map[string]func() error) {
	name := os.Getenv(roleEnv)
	if name == "" {
		os.Exit(m.Run())
	}
	role, ok := roles[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "child: unknown role %q\n", name)
		os.Exit(3)
	}
	if err := role(); err != nil {
		fmt.Fprintln(os.Stderr, "child "+name+":", err)
		os.Exit(3)
	}
	os.Exit(0)
}

// Child is a started child process. Read Output only after Wait or Kill.
type Child struct {
	cmd *exec.Cmd
	out strings.Builder
}

// Start runs the test binary as a child in role, with env (KEY=value)
// added to this process's environment.
func Start(t testing.TB, role string, env ...string) *Child {
	t.Helper()
	c := &Child{cmd: exec.Command(os.Args[0], "-test.run=^$")}
	c.cmd.Env = append(append(os.Environ(), roleEnv+"="+role), env...)
	c.cmd.Stdout, c.cmd.Stderr = &c.out, &c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// Output is what the child wrote to stdout and stderr.
func (c *Child) Output() string { return c.out.String() }

// Wait waits for the child and fails t if it did not succeed.
func (c *Child) Wait(t testing.TB, what string) {
	t.Helper()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("%s: %v\n%s", what, err, c.out.String())
	}
}

// KillAfter lets the child run for d, SIGKILLs it, and fails t unless it
// died of the signal.
func (c *Child) KillAfter(t testing.TB, d time.Duration, what string) {
	t.Helper()
	time.Sleep(d)
	_ = c.cmd.Process.Signal(syscall.SIGKILL)
	err := c.cmd.Wait()
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
		t.Fatalf("%s: the child ended on its own (%v): %s", what, err, c.out.String())
	}
}
