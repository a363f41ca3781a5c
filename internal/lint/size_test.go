package lint

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The size rules: a file a reader takes in whole, and a binary that only
// composes the library (its logic lives in packages a program embedding
// covmirror can call).
const (
	maxFileLines = 400
	maxCmdLines  = 1400
)

// TestFileSizes fails naming each non-test Go file over maxFileLines
// lines, and the total of non-test Go lines under cmd/ over maxCmdLines.
func TestFileSizes(t *testing.T) {
	root := moduleRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	cmdLines := 0
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
		if strings.HasPrefix(name, "cmd/") {
			cmdLines += n
		}
	}
	if cmdLines > maxCmdLines {
		t.Errorf("cmd/ has %d non-test lines, over %d: move library logic into a package (tier, pod, queries, ...)", cmdLines, maxCmdLines)
	}
}
