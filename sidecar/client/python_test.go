package client

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/internal/memstates"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/sidecar"
)

// pythonClient is the Python client's package, beside the Go client's
// tests in the repository.
const pythonClient = "../../examples/python"

// TestPythonClient installs the Python client with pip, offline and with
// build isolation (its pyproject.toml needs nothing beyond the standard
// library to build), and runs its unittest tests from the installed
// package against a real sidecar: over loopback TCP with a token and over
// the Unix socket.
func TestPythonClient(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 is not installed: the Python client's tests need it (apt-get install python3 python3-pip)")
	}
	seed := testseed.Seed(t)
	site := t.TempDir()
	install := exec.Command(python, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check", "--target", site, pythonClient)
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("pip install %s: %v\n%s", pythonClient, err, out)
	}
	// Gap states in memory beside the tier (memstates), until the tiers
	// keep them themselves.
	states := memstates.New()
	p := startPod(t, nil, func(o *sidecar.Options) { o.Durable = memstates.With(o.Durable, states) })
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests, err := filepath.Abs(filepath.Join(pythonClient, "tests"))
	if err != nil {
		t.Fatal(err)
	}
	run := exec.Command(python, "-m", "unittest", "discover", "-v", "-s", tests)
	run.Dir = t.TempDir() // not the source directory: the installed module is the one tested
	run.Env = append(os.Environ(), "PYTHONPATH="+site, "PYTHONDONTWRITEBYTECODE=1",
		"COVMIRROR_TEST_URL=http://"+p.addr, "COVMIRROR_TEST_SOCKET="+p.socket,
		"COVMIRROR_TEST_TOKEN_FILE="+tokenFile, "COVMIRROR_TEST_INSTALLED="+site,
		"COVMIRROR_SEED="+strconv.FormatUint(seed, 10))
	out, err := run.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "\nOK") {
		t.Fatalf("python3 -m unittest: %v\n%s", err, out)
	}
	t.Logf("%s", out)
	// test_retries_record_each_entry_once: each entry once, whatever the
	// retries after lost answers.
	seen, retried := map[string]int{}, 0
	for _, e := range states.Events() {
		if e.Topic == "py-states-retry" {
			retried++
			if seen[fmt.Sprintf("%v %v", e.Destination, e.Range)]++; seen[fmt.Sprintf("%v %v", e.Destination, e.Range)] > 1 {
				t.Errorf("the Python client's retries recorded %v %v twice", e.Destination, e.Range)
			}
		}
	}
	if retried == 0 {
		t.Error("the Python retry test recorded no gap states")
	}
}
