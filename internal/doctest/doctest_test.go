package doctest

import (
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const root = "../.."

// pages returns README.md and docs/*.md, relative to the repository's root.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v", err)
	}
	out := []string{"README.md"}
	for _, d := range docs {
		out = append(out, filepath.ToSlash(strings.TrimPrefix(d, root+string(filepath.Separator))))
	}
	return out
}

func blocksOf(t *testing.T, page string) []Block {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(root, page))
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := Parse(page, string(text))
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// TestBlocks runs every fenced block of README.md and docs/*.md as its
// language says (see the package's doc), and counts what it ran.
func TestBlocks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the covmirror binaries")
	}
	r := newRunner(t)
	counts := map[string]int{}
	for _, page := range pages(t) {
		files := map[string]string{} // NAME.conf -> text, from the page's ini blocks
		for _, b := range blocksOf(t, page) {
			kind := r.check(t, b, files)
			counts[kind]++
		}
	}
	t.Logf("blocks: %v", counts)
	if counts["sh run"] == 0 || counts["go program"] == 0 || counts["ini"] == 0 {
		t.Errorf("the pages' blocks ran %v: want sh blocks, a Go program and a configuration file among them", counts)
	}
}

var confName = regexp.MustCompile(`^# ([A-Za-z0-9_.-]+\.conf)\b`)

// check runs one block and says how: "sh run", "sh flags", "sh marker",
// "go program", "go fragment", "ini", "shown".
func (r *runner) check(t *testing.T, b Block, files map[string]string) string {
	t.Helper()
	switch b.Lang {
	case "sh":
		switch {
		case b.Marker == "":
			r.runSh(t, b, b.Text, files)
			return "sh run"
		case b.Marker == "flags":
			// Every covmirror command given --help after its arguments:
			// its flags and configuration are parsed, nothing contacted.
			r.runSh(t, b, "covmirror() { command covmirror \"$@\" --help >/dev/null; }\n"+b.Text, files)
			return "sh flags"
		default:
			checkMarker(t, b)
			return "sh marker"
		}
	case "go":
		if b.Marker != "" {
			t.Errorf("%s: a go block takes no marker", b)
		}
		if strings.HasPrefix(b.Text, "package main\n") {
			r.runGo(t, b)
			return "go program"
		}
		checkFragment(t, b)
		return "go fragment"
	case "ini":
		path := filepath.Join(t.TempDir(), "covmirror.conf")
		if err := os.WriteFile(path, []byte(b.Text), 0o600); err != nil {
			t.Fatal(err)
		}
		// reconcile takes every key a file may hold (its checkers too).
		if out, err := exec.Command(r.bin(t, "covmirror"), "--config", path, "reconcile", "--help").CombinedOutput(); err != nil {
			t.Errorf("%s: covmirror refuses the configuration file: %v\n%s%s", b, err, out, b.Text)
		}
		if m := confName.FindStringSubmatch(b.Text); m != nil {
			files[m[1]] = b.Text
		}
		return "ini"
	case "", "text", "yaml", "python", "sql":
		if rest, ok := strings.CutPrefix(b.Marker, "excerpt-of "); ok {
			src, err := os.ReadFile(filepath.Join(root, rest))
			if err != nil || !strings.Contains(string(src), b.Text) {
				t.Errorf("%s: not a verbatim excerpt of %s (%v)", b, rest, err)
			}
		} else if b.Marker != "" {
			t.Errorf("%s: a %q block takes no marker but excerpt-of PATH", b, b.Lang)
		}
		return "shown"
	default:
		t.Errorf("%s: fence language %q: command blocks are sh (run by the doc test), others text, yaml, python, sql, go or ini", b, b.Lang)
		return "refused"
	}
}

// checkMarker: `PKG TestName` names a test that exists and contains each
// of the block's commands, or reads the block's page.
func checkMarker(t *testing.T, b Block) {
	t.Helper()
	pkg, name, ok := strings.Cut(b.Marker, " ")
	if !ok || !strings.HasPrefix(name, "Test") || strings.Contains(name, " ") {
		t.Errorf("%s: marker %q: want flags, or PKG TestName", b, b.Marker)
		return
	}
	tests, _ := filepath.Glob(filepath.Join(root, pkg, "*_test.go"))
	for _, f := range tests {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(src, []byte("func "+name+"(t *testing.T)")) {
			continue
		}
		if bytes.Contains(src, []byte(b.Page)) {
			return
		}
		for _, c := range Commands(b.Text) {
			if !bytes.Contains(src, []byte(c)) {
				t.Errorf("%s: %s (%s) does not contain the command %q, nor read %s", b, name, f, c, b.Page)
			}
		}
		return
	}
	t.Errorf("%s: marker %q: no func %s(t *testing.T) in %s", b, b.Marker, name, pkg)
}

// checkFragment parses a Go fragment as statements and checks that each
// exported name it takes from a covmirror package exists there.
func checkFragment(t *testing.T, b Block) {
	t.Helper()
	src := "package p\nfunc _() {\n" + b.Text + "}\n"
	f, err := parser.ParseFile(token.NewFileSet(), "fragment.go", src, 0)
	if err != nil {
		t.Errorf("%s: not Go statements: %v\n%s", b, err, b.Text)
		return
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || !ast.IsExported(sel.Sel.Name) {
			return true
		}
		dir, ok := packageDirs()[x.Name]
		if ok && !exported(dir)[sel.Sel.Name] {
			t.Errorf("%s: %s.%s does not exist in %s", b, x.Name, sel.Sel.Name, dir)
		}
		return true
	})
}

// packageDirs maps the covmirror packages' names to their directories:
// those a fragment names (sidecar/client as client).
var packageDirs = sync.OnceValue(func() map[string]string {
	dirs := map[string]string{}
	for _, d := range []string{"coverage", "local", "mirror", "recovery", "iceberg", "durable", "object", "postgres",
		"compaction", "queries", "sidecar", "sidecar/client", "reconcile", "benthos", "gapmetrics", "gapstate", "lease", "pod", "replica", "tier", "fleet"} {
		dirs[filepath.Base(d)] = filepath.Join(root, d)
	}
	return dirs
})

var exportedCache sync.Map

// exported lists a package's exported top-level names and methods.
func exported(dir string) map[string]bool {
	if m, ok := exportedCache.Load(dir); ok {
		return m.(map[string]bool)
	}
	names := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			continue
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				names[d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
	}
	exportedCache.Store(dir, names)
	return names
}

// runner builds the binaries the blocks name, once.
type runner struct {
	dir      string // the binaries
	lastWork string // the directory the last sh block ran in
	mu       sync.Mutex
	done     map[string]error
}

func newRunner(t *testing.T) *runner {
	return &runner{dir: t.TempDir(), done: map[string]error{}}
}

// bin builds ./cmd/name (pure Go, as the serve process tests build it:
// query then computes in Go rather than DuckDB) and returns its path.
func (r *runner) bin(t *testing.T, name string) string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	path := filepath.Join(r.dir, name)
	if _, ok := r.done[name]; !ok {
		cmd := exec.Command("go", "build", "-o", path, "./cmd/"+name)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			err = &buildError{name, err, out}
		}
		r.done[name] = err
	}
	if err := r.done[name]; err != nil {
		t.Fatal(err)
	}
	return path
}

type buildError struct {
	name string
	err  error
	out  []byte
}

func (e *buildError) Error() string {
	return "go build ./cmd/" + e.name + ": " + e.err.Error() + "\n" + string(e.out)
}

var goRun = regexp.MustCompile(`go run \./cmd/(covmirror(?:-lite|-benthos)?)\b`)

// runSh runs a command block in a directory of its own.
func (r *runner) runSh(t *testing.T, b Block, script string, files map[string]string) {
	t.Helper()
	work := t.TempDir()
	r.lastWork = work
	for _, d := range []string{"examples", "deploy"} {
		abs, _ := filepath.Abs(filepath.Join(root, d))
		if err := os.Symlink(abs, filepath.Join(work, d)); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(work, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	script = goRun.ReplaceAllString(script, "$1")
	for _, name := range []string{"covmirror-lite", "covmirror-benthos", "covmirror"} {
		if strings.Contains(script, name) {
			r.bin(t, name)
		}
	}
	env := []string{"PATH=" + r.dir + ":" + os.Getenv("PATH"), "HOME=" + work, "TMPDIR=" + work, "LANG=C.UTF-8"}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); slices.Contains([]string{"GOCACHE", "GOPATH", "GOMODCACHE", "GOFLAGS", "PGPASSWORD"}, k) {
			env = append(env, kv)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", script)
	cmd.Dir, cmd.Env = work, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err := cmd.Run()
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the block left in the background
	}
	if err != nil {
		t.Errorf("%s: %v\n--- block\n%s--- output\n%s", b, err, b.Text, out.String())
	}
}

// runGo builds and runs a `package main` block inside the module, as a
// file of a directory that exists only in the build's overlay.
func (r *runner) runGo(t *testing.T, b Block) {
	t.Helper()
	dir := t.TempDir()
	main := filepath.Join(dir, "main.go")
	if err := os.WriteFile(main, []byte(b.Text), 0o600); err != nil {
		t.Fatal(err)
	}
	target, _ := filepath.Abs(filepath.Join(root, "internal", "doctest", "program", "main.go"))
	overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {target: main}})
	ov := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(ov, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "run", "-overlay", ov, "./internal/doctest/program")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("%s: go run: %v\n%s", b, err, out)
	}
}
