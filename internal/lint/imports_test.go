package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/covmirror/covmirror"

// testOnly are the packages that exist for tests: no production package
// imports them (they import each other). coveragetest and durabletest are
// conformance suites an outside backend's tests import too; they are
// allowed in test files only, like the rest.
var testOnly = []string{
	"coverage/coveragetest",
	"durable/durabletest",
	"internal/browsertest",
	"internal/catalogtest",
	"internal/charttest",
	"internal/childproc",
	"internal/fleetbench",
	"internal/fleetsim",
	"internal/gapspec",
	"internal/logtest",
	"internal/pipelinetest",
	"internal/podtest",
	"internal/scale",
	"internal/seaweedtest",
	"internal/tabletest",
	"internal/testseed",
}

// tiers are the concrete durable tiers.
var tiers = []string{"iceberg", "object", "postgres"}

// pkg is what the rules read of one package.
type pkg struct {
	ImportPath   string
	Imports      []string // non-test files' imports
	Deps         []string // non-test files' transitive dependencies
	TestImports  []string
	XTestImports []string
	Error        *struct{ Err string }
}

var (
	graphOnce sync.Once
	graph     map[string]*pkg // by path relative to the module ("" for the root)
	graphErr  error
)

// packages lists the module's packages once per test binary.
func packages(t *testing.T) map[string]*pkg {
	t.Helper()
	graphOnce.Do(func() { graph, graphErr = list() })
	if graphErr != nil {
		t.Fatal(graphErr)
	}
	return graph
}

func list() (map[string]*pkg, error) {
	cmd := exec.Command("go", "list", "-e", "-json=ImportPath,Imports,Deps,TestImports,XTestImports,Error", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New("go list ./... in the module root: " + err.Error() + ": " + stderr.String())
	}
	all := map[string]*pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, errors.New("decoding go list's output: " + err.Error())
		}
		if p.Error != nil {
			return nil, errors.New("go list " + p.ImportPath + ": " + p.Error.Err)
		}
		all[rel(p.ImportPath)] = p
	}
	return all, nil
}

// rel is path relative to the module, or path itself outside it.
func rel(path string) string {
	if path == module {
		return ""
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return path
}

func internalTo(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// get is the package at path relative to the module; the test fails if the
// module has none, so a rule never silently checks a package that moved.
func get(t *testing.T, path string) *pkg {
	t.Helper()
	p, ok := packages(t)[path]
	if !ok {
		t.Fatalf("the module has no package %s: update the import rules", path)
	}
	return p
}

// only fails for every covmirror package path imports directly that is
// not in allowed.
func only(t *testing.T, path string, allowed ...string) {
	t.Helper()
	for _, imp := range get(t, path).Imports {
		if internalTo(imp) && !slices.Contains(allowed, rel(imp)) {
			t.Errorf("%s imports %s: it may import only %s of covmirror's packages", path, imp, orNothing(allowed))
		}
	}
}

// never fails once for each forbidden path (a covmirror package relative to
// the module, or a full path) that path depends on, transitively, in its
// non-test files: the dependency itself or one below it. The message names
// the direct imports it comes through.
func never(t *testing.T, path, why string, forbidden ...string) {
	t.Helper()
	p := get(t, path)
	all := packages(t)
	for _, f := range forbidden {
		if !strings.Contains(f, ".") {
			f = module + "/" + f
		}
		under := func(dep string) bool { return dep == f || strings.HasPrefix(dep, f+"/") }
		i := slices.IndexFunc(p.Deps, under)
		if i < 0 {
			continue
		}
		var through []string
		for _, imp := range p.Imports {
			if q, ok := all[rel(imp)]; under(imp) || (ok && internalTo(imp) && slices.ContainsFunc(q.Deps, under)) {
				through = append(through, imp)
			}
		}
		t.Errorf("%s depends on %s through its import of %s (%s)", path, p.Deps[i], orNothing(through), why)
	}
}

func orNothing(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// TestLayering: the model, the tier interface and the checkpointer import
// only what lies below them.
func TestLayering(t *testing.T) {
	only(t, "coverage", "internal/wirejson")
	only(t, "gapstate", "coverage")
	only(t, "durable", "coverage", "gapstate")
	// internal/backoff is the retry schedule the tiers share, no tier.
	only(t, "mirror", "coverage", "durable", "gapstate", "local", "internal/backoff")
	only(t, "recovery", "coverage", "durable", "gapstate")
	only(t, "reconcile", "coverage", "durable", "gapstate", "recovery", "internal/wirejson", "internal/redact")
	// internal/redact is the one redaction every surface prints through:
	// the standard library only.
	only(t, "internal/redact")
}

// TestNoConcreteTier: the checkpointer, the planner and reconcile work on any
// durable.Tier, so none reaches a concrete one, even through another
// package.
func TestNoConcreteTier(t *testing.T) {
	for _, p := range []string{"mirror", "recovery", "reconcile"} {
		never(t, p, "it must work on any durable.Tier", tiers...)
	}
	never(t, "sidecar", "the sidecar takes its tiers as durable.Tier", "iceberg")
}

// TestClientLinksNoPod: sidecar/client is for Go programs outside the pod,
// which record over the API instead of linking the pod: the model and the
// retry schedule and the redaction, and nothing of the tiers, the server or
// their engines.
func TestClientLinksNoPod(t *testing.T) {
	only(t, "sidecar/client", "coverage", "gapstate", "internal/backoff", "internal/redact")
	never(t, "sidecar/client", "a program outside the pod links only the model and the standard library",
		"sidecar", "local", "durable", "mirror", "iceberg", "object", "postgres",
		"github.com/cockroachdb/pebble", "github.com/apache/iceberg-go", "github.com/duckdb")
}

// TestLiteLinksOnlyTheLocalTier: covmirror-lite exists to start fast
// (BenchmarkStartup), so it and internal/lite link the model, the local
// tier and the settings plumbing, and nothing of the durable tier, the pod
// or their engines, whose package inits cost what it saves.
func TestLiteLinksOnlyTheLocalTier(t *testing.T) {
	only(t, "internal/lite", "coverage", "local", "internal/settings", "internal/token", "internal/redact", "internal/version")
	only(t, "cmd/covmirror-lite", "internal/lite", "internal/settings")
	for _, p := range []string{"internal/lite", "cmd/covmirror-lite"} {
		never(t, p, "the small binary links only the local tier",
			"sidecar", "durable", "mirror", "iceberg", "object", "postgres", "tier", "pod", "internal/lazysubstrait",
			"github.com/apache/iceberg-go", "github.com/apache/arrow-go", "github.com/duckdb", "github.com/aws",
			"github.com/jackc/pgx", "modernc.org/sqlite")
	}
}

// TestQueriesLinkNoPebble: every query links the queries package, which
// has no use for the pod-local tier's storage engine.
func TestQueriesLinkNoPebble(t *testing.T) {
	never(t, "queries", "the queries read durable tiers only", "github.com/cockroachdb/pebble")
}

// TestDuckDBOnlyInQueriesAndCmd: DuckDB is cgo; the libraries a pipeline
// embeds must build without it.
func TestDuckDBOnlyInQueriesAndCmd(t *testing.T) {
	for path, p := range packages(t) {
		if path == "queries" || path == "cmd" || strings.HasPrefix(path, "cmd/") {
			continue
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if strings.HasPrefix(imp, "github.com/duckdb/") {
				t.Errorf("%s imports %s: DuckDB is imported only by queries and cmd/...", path, imp)
			}
		}
	}
}

// TestBenthosOnlyInItsPackages: Benthos (and the module's dependencies
// it brings) is linked only where a stream runs: the benthos package and
// the covmirror-benthos binary. The covmirror binary and every library a
// pipeline embeds build without it.
func TestBenthosOnlyInItsPackages(t *testing.T) {
	for path, p := range packages(t) {
		if path == "benthos" || path == "cmd/covmirror-benthos" {
			continue
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if strings.HasPrefix(imp, "github.com/redpanda-data/") {
				t.Errorf("%s imports %s: Benthos is imported only by benthos and cmd/covmirror-benthos", path, imp)
			}
		}
	}
	never(t, "cmd/covmirror", "the covmirror binary does not link Benthos", "github.com/redpanda-data/benthos/v4")
}

// TestVersionLinksNothing: every binary and tier reads internal/version,
// so it links only the standard library; the tiers stamp checkpoints with
// it and must not link the Prometheus client through it (versionmetric
// holds the metric).
func TestVersionLinksNothing(t *testing.T) {
	for _, dep := range get(t, "internal/version").Deps {
		if strings.Contains(strings.SplitN(dep, "/", 2)[0], ".") {
			t.Errorf("internal/version depends on %s: it links the standard library only", dep)
		}
	}
}

// TestTestPackagesStayInTests: no production file imports a package that
// exists for tests; test-only packages may import each other.
func TestTestPackagesStayInTests(t *testing.T) {
	all := packages(t)
	for _, p := range testOnly {
		get(t, p) // the list names packages that exist
	}
	for path, p := range all {
		if slices.Contains(testOnly, path) {
			continue
		}
		for _, imp := range p.Imports {
			if slices.Contains(testOnly, rel(imp)) {
				t.Errorf("%s imports %s in a non-test file: it exists for tests only", path, imp)
			}
		}
	}
}

// TestBinaryLinksNoTestPackages: the covmirror binary links no simulation
// or fault injection.
func TestBinaryLinksNoTestPackages(t *testing.T) {
	never(t, "cmd/covmirror", "test machinery in the shipped binary", "internal/sim", "internal/faultio", "github.com/cockroachdb/pebble/v2/vfs/errorfs")
}

// kubernetesModules are Helm's and the Kubernetes API's modules: heavy,
// and of use only to the chart's offline tests.
var kubernetesModules = []string{"helm.sh/", "k8s.io/", "sigs.k8s.io/", "github.com/prometheus-operator/"}

// TestKubernetesOnlyInChartTest: Helm and the Kubernetes modules are
// imported only by internal/charttest's tests, so that no binary and no
// library a pipeline embeds links them.
func TestKubernetesOnlyInChartTest(t *testing.T) {
	for path, p := range packages(t) {
		imports := slices.Concat(p.Imports, p.TestImports, p.XTestImports)
		if path == "internal/charttest" {
			imports = p.Imports // its tests are where they belong
		}
		for _, imp := range imports {
			if slices.ContainsFunc(kubernetesModules, func(m string) bool { return strings.HasPrefix(imp, m) }) {
				t.Errorf("%s imports %s: Helm and the Kubernetes modules are imported only by internal/charttest's tests", path, imp)
			}
		}
	}
	for _, bin := range []string{"cmd/covmirror", "cmd/covmirror-lite", "cmd/covmirror-benthos"} {
		never(t, bin, "the binaries do not link Helm or the Kubernetes API", "helm.sh/helm/v4", "k8s.io/api", "k8s.io/apimachinery", "sigs.k8s.io/yaml")
	}
}
