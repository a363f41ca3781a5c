package lint

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The budgets of what package initialization may allocate in a covmirror
// process that runs `covmirror version`. Allocations, not time: the same
// binary allocates the same bytes in its inits on every run, so the test
// is deterministic where a time limit would not be. Once, iceberg-go's
// table/substrait package alone allocated 32 MB loading Substrait's
// definitions at init (about 75 ms of CPU in every process); with it
// deferred (internal/lazysubstrait) all inits allocate about 6 MB, the
// largest package 1.2 MB.
const (
	initBytesBudget       = 12 << 20
	initBytesBudgetPerPkg = 4 << 20
)

// TestStartupInitAllocations builds the covmirror binary, runs `covmirror
// version` with GODEBUG=inittrace=1 and fails if its package inits
// allocate more than the budgets, naming the largest.
func TestStartupInitAllocations(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "covmirror")
	build := exec.Command("go", "build", "-o", bin, "./cmd/covmirror")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/covmirror: %v\n%s", err, out)
	}
	run := exec.Command(bin, "version")
	run.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	run.Stderr = &stderr
	if err := run.Run(); err != nil {
		t.Fatalf("covmirror version: %v\n%s", err, stderr.String())
	}
	inits, err := parseInitTrace(stderr.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(inits) < 100 {
		t.Fatalf("inittrace reported %d package inits: GODEBUG=inittrace=1 no longer prints what this test reads", len(inits))
	}
	var total int64
	for _, in := range inits {
		total += in.bytes
	}
	slices.SortFunc(inits, func(a, b initCost) int { return int(b.bytes - a.bytes) })
	top := inits[:min(5, len(inits))]
	t.Logf("%d package inits allocate %d bytes; the largest: %v", len(inits), total, top)
	if total > initBytesBudget {
		t.Errorf("package inits allocate %d bytes in `covmirror version`, over the budget of %d: the largest are %v; defer that work to the command that needs it (see internal/lazysubstrait and docs/scale.md)", total, initBytesBudget, top)
	}
	for _, in := range inits {
		if in.bytes > initBytesBudgetPerPkg {
			t.Errorf("package %s allocates %d bytes at init, over the per-package budget of %d", in.pkg, in.bytes, initBytesBudgetPerPkg)
		}
	}
}

type initCost struct {
	pkg   string
	bytes int64
}

func (c initCost) String() string { return fmt.Sprintf("%s %d B", c.pkg, c.bytes) }

// parseInitTrace reads the runtime's inittrace lines:
//
//	init PKG @T ms, D ms clock, N bytes, M allocs
func parseInitTrace(out []byte) ([]initCost, error) {
	var inits []initCost
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		n, err := strconv.ParseInt(f[7], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("inittrace line %q: %w", sc.Text(), err)
		}
		inits = append(inits, initCost{pkg: f[1], bytes: n})
	}
	return inits, sc.Err()
}

// TestLazySubstraitOnlyInTheBinary: deferring Substrait's definitions is
// the covmirror binary's choice, which calls Load before every command
// that reads a table; a library package importing it would leave its
// users with an empty collection.
func TestLazySubstraitOnlyInTheBinary(t *testing.T) {
	const lazy = module + "/internal/lazysubstrait"
	get(t, "internal/lazysubstrait")
	for path, p := range packages(t) {
		if path == "cmd/covmirror" {
			continue
		}
		if slices.Contains(p.Imports, lazy) {
			t.Errorf("%s imports %s: only cmd/covmirror may", path, lazy)
		}
	}
}
