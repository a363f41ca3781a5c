package lint

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layoutDoc is the document whose "## Layout" table names every package.
const layoutDoc = "docs/design.md"

// TestLayoutTable checks the package layout table of docs/design.md
// against the tree: every package go list ./... reports has a row, and
// every row names a package, so the table cannot drift as packages come
// and go.
func TestLayoutTable(t *testing.T) {
	root := moduleRoot(t)
	pkgs := listPackages(t, root)
	rows := layoutRows(t, filepath.Join(root, layoutDoc))
	for _, p := range pkgs {
		if !slices.Contains(rows, p) {
			t.Errorf("package %s has no row in the layout table of %s: add a row \"| `%s` | what it owns |\"", p, layoutDoc, p)
		}
	}
	for _, r := range rows {
		if !slices.Contains(pkgs, r) {
			t.Errorf("the layout table of %s has a row for %s, which is no package of the module (go list ./...): remove or correct the row", layoutDoc, r)
		}
	}
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		t.Fatal("go env GOMOD: not inside a module")
	}
	return filepath.Dir(gomod)
}

// listPackages returns the module's packages as the table spells them:
// the directory from the module root, with a trailing slash.
func listPackages(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.Dir}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./... in %s: %v", root, err)
	}
	var pkgs []string
	for _, dir := range strings.Fields(string(out)) {
		rel, err := filepath.Rel(root, dir)
		if err != nil || rel == "." {
			continue // the module root holds no package today; it would need a row named ./
		}
		pkgs = append(pkgs, filepath.ToSlash(rel)+"/")
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list ./... in %s listed no packages", root)
	}
	return pkgs
}

// rowPath matches a layout table row: its first cell is one folder in
// backquotes.
var rowPath = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|")

// layoutRows returns the folders the first column of the table under the
// "## Layout" heading names.
func layoutRows(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the layout table: %v", err)
	}
	defer f.Close()
	var rows []string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## Layout"
			continue
		}
		if !in || !strings.HasPrefix(line, "|") {
			continue
		}
		if m := rowPath.FindStringSubmatch(line); m != nil {
			rows = append(rows, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s has no \"## Layout\" table of packages", path)
	}
	return rows
}
