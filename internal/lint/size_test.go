package lint

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The size rules: a file a reader takes in whole, and binaries that only
// compose the library (their logic lives in packages a program embedding
// covmirror can call): cmd/covmirror, the tool of every command, at most
// maxCovmirrorLines, and any other binary under cmd/ at most maxCmdLines.
const (
	maxFileLines      = 400
	maxCovmirrorLines = 1500
	maxCmdLines       = 250
)

// TestFileSizes fails naming each non-test Go file over maxFileLines
// lines, and each binary under cmd/ whose non-test Go lines are over its
// budget.
func TestFileSizes(t *testing.T) {
	root := moduleRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	cmdLines := map[string]int{} // cmd/X -> its non-test lines
	for _, name := range strings.Fields(string(out)) {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, name))
		if os.IsNotExist(err) {
			continue // deleted in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(b, []byte("\n"))
		if n > maxFileLines {
			t.Errorf("%s has %d lines, over %d: split it along a real seam", name, n, maxFileLines)
		}
		if rest, ok := strings.CutPrefix(name, "cmd/"); ok {
			bin, _, _ := strings.Cut(rest, "/")
			cmdLines["cmd/"+bin] += n
		}
	}
	for bin, n := range cmdLines {
		budget := maxCmdLines
		if bin == "cmd/covmirror" {
			budget = maxCovmirrorLines
		}
		if n > budget {
			t.Errorf("%s has %d non-test lines, over %d: move library logic into a package (tier, pod, queries, reconcile, ...)", bin, n, budget)
		}
	}
}
