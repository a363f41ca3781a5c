package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var link = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinks: every relative link of README.md and docs/*.md resolves to a
// file or directory of the repository.
func TestLinks(t *testing.T) {
	n := 0
	for _, page := range pages(t) {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(text), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			n++
			if _, err := os.Stat(filepath.Join(root, filepath.Dir(page), target)); err != nil {
				t.Errorf("%s: the link %q does not resolve: %v", page, m[1], err)
			}
		}
	}
	if n == 0 {
		t.Fatal("no relative links found: the pattern is wrong")
	}
}

// TestSetUpCommands runs the README's two set-up commands: the demo (as
// `go run ./cmd/covmirror demo` runs it, on embedded defaults in a fresh
// directory), and `make ci`, which is checked to be the command .ci/run
// runs (a test cannot run CI from inside it).
func TestSetUpCommands(t *testing.T) {
	const demo, tests = "go run ./cmd/covmirror demo", "make ci"
	var setUp *Block
	for _, b := range blocksOf(t, "README.md") {
		if b.Marker == "internal/doctest TestSetUpCommands" {
			setUp = &b
		}
	}
	if setUp == nil {
		t.Fatal("the README has no set-up block marked internal/doctest TestSetUpCommands")
	}
	if got := Commands(setUp.Text); len(got) != 2 || got[0] != demo || got[1] != tests {
		t.Fatalf("the README's set-up commands %q: want %q and %q", got, demo, tests)
	}
	ciRun, err := os.ReadFile(filepath.Join(root, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(ciRun)), "\n")
	if last := strings.TrimSpace(lines[len(lines)-1]); last != tests {
		t.Fatalf(".ci/run ends with %q: the README's test command is %q; keep them the same", last, tests)
	}
	if testing.Short() {
		t.Skip("the demo builds covmirror")
	}
	r := newRunner(t)
	r.runSh(t, *setUp, demo+"\n", nil)
	if matches, _ := filepath.Glob(filepath.Join(r.lastWork, "covmirror-data", "*")); len(matches) == 0 {
		t.Errorf("the demo left nothing under ./covmirror-data, where the README says it runs")
	}
}
