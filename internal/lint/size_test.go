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
const maxFileLines = 400

// maxCmdLines bounds each binary's non-test Go lines.
var maxCmdLines = map[string]int{
	"cmd/covmirror":         1400,
	"cmd/covmirror-benthos": 250, // Benthos' CLI and the plugins' registration, nothing more
}

// TestFileSizes fails naming each non-test Go file over maxFileLines
// lines, and each binary under cmd/ whose non-test Go lines total more
// than its maxCmdLines (a binary not listed there fails too).
func TestFileSizes(t *testing.T) {
	root := moduleRoot(t)
	out, err := exec.Command("git", "-C", root, "ls-files", "--cached", "--others", "--exclude-standard", "*.go").Output()
	if err != nil {
		t.Fatalf("git ls-files: %v", err)
	}
	cmdLines := map[string]int{}
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
		limit, ok := maxCmdLines[bin]
		if !ok {
			t.Errorf("%s has no line limit: add it to maxCmdLines", bin)
		} else if n > limit {
			t.Errorf("%s has %d non-test lines, over %d: move library logic into a package (tier, pod, queries, benthos, ...)", bin, n, limit)
		}
	}
}
