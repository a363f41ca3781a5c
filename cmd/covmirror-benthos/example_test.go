package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/recovery"
	"github.com/covmirror/covmirror/tier"
)

const mainEnv = "COVMIRROR_BENTHOS_TEST_MAIN"

// TestMain runs main when the test binary is started as the command
// (mainEnv set): the examples then run on the binary as built.
func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// command runs covmirror-benthos with args in dir, the example's
// variables set, and returns its output and exit code.
func command(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	return commandEnv(t, dir, nil, args...)
}

// commandEnv is command with env added last (BATCHES=N overrides 120).
func commandEnv(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), mainEnv+"=1", "COVMIRROR_STATE="+filepath.Join(dir, "state"),
		"EXAMPLE_DATA="+filepath.Join(dir, "data"), "BATCHES=120", "BENTHOS_HTTP=127.0.0.1:0", "LOG_LEVEL=warn"), env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), code
}

func example(t *testing.T, name string) string {
	p, err := filepath.Abs(filepath.Join("..", "..", "examples", "benthos", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// held is the batch ids a sink's directory of the example holds.
func held(t *testing.T, dir, sink string) []uint64 {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "data", sink))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var ids []uint64
	for _, e := range entries {
		id, err := strconv.ParseUint(strings.TrimSuffix(e.Name(), ".json"), 10, 64)
		if err != nil {
			t.Fatalf("%s/%s: not a batch file", sink, e.Name())
		}
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// committedAndPlan is the example state's committed coverage by sink and
// its plan.
func committedAndPlan(t *testing.T, dir string) (map[string][]uint64, []recovery.Gap) {
	t.Helper()
	ctx := context.Background()
	tr, closer, err := tier.Open(ctx, tier.Settings{State: filepath.Join(dir, "state"), Writer: "test"}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	all, err := tr.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]uint64{}
	for d, set := range all {
		for r := range set.All() {
			for id := r.Start; id < r.End; id++ {
				out[d.Sink] = append(out[d.Sink], id)
			}
		}
	}
	gaps, err := recovery.CommittedGaps(ctx, tr, recovery.GapsFilter{})
	if err != nil {
		t.Fatal(err)
	}
	return out, gaps
}

// TestExamples: the example pipeline lints and runs on the binary,
// leaves coverage exactly what each sink's directory holds with search's
// gaps, and the replay stream closes them.
func TestExamples(t *testing.T) {
	dir := t.TempDir()
	pipeline, replay := example(t, "pipeline.yaml"), example(t, "replay.yaml")
	if out, code := command(t, dir, "lint", pipeline, replay); code != 0 {
		t.Fatalf("lint: exit %d\n%s", code, out)
	}
	for kind, name := range map[string]string{"outputs": "covmirror", "inputs": "covmirror_plan"} {
		if out, code := command(t, dir, "list", kind); code != 0 || !strings.Contains(out, name) {
			t.Fatalf("list %s: exit %d, want %s listed\n%s", kind, code, name, out)
		}
	}
	if out, code := command(t, dir, "-c", pipeline); code != 0 {
		t.Fatalf("the pipeline: exit %d\n%s", code, out)
	}
	all := make([]uint64, 120)
	for i := range all {
		all[i] = uint64(i)
	}
	got, gaps := committedAndPlan(t, dir)
	for _, sink := range []string{"raw", "lake", "search"} {
		if !slices.Equal(got[sink], held(t, dir, sink)) {
			t.Errorf("%s: coverage %v, but its directory holds %v", sink, got[sink], held(t, dir, sink))
		}
	}
	if !slices.Equal(held(t, dir, "raw"), all) || len(gaps) == 0 {
		t.Fatalf("raw holds %v, gaps %v: want every batch in raw and search's gaps", held(t, dir, "raw"), gaps)
	}
	for _, g := range gaps {
		if g.Sink != "search" || g.Kind != recovery.KindReplay {
			t.Errorf("gap %+v: only search is down now and then", g)
		}
	}
	if out, code := command(t, dir, "-c", replay); code != 0 {
		t.Fatalf("the replay: exit %d\n%s", code, out)
	}
	got, gaps = committedAndPlan(t, dir)
	if len(gaps) > 0 {
		t.Fatalf("after the replay: gaps %v", gaps)
	}
	for _, sink := range []string{"raw", "lake", "search"} {
		if !slices.Equal(got[sink], all) || !slices.Equal(held(t, dir, sink), all) {
			t.Errorf("%s after the replay: coverage %v, holds %v, want every batch", sink, got[sink], held(t, dir, sink))
		}
	}
}

// TestLintNamesAMisspeltField: the covmirror output's fields are in
// Benthos' spec, so lint names one that is not.
func TestLintNamesAMisspeltField(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "bad.yaml")
	y := "input:\n  generate:\n    count: 1\n    mapping: 'root = {}'\noutput:\n  covmirror:\n    sinkk: lake\n    topic: t\n    partition: '0'\n    batch_id: '1'\n    output:\n      drop: {}\n"
	if err := os.WriteFile(conf, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := command(t, dir, "lint", conf)
	if code == 0 || !strings.Contains(out, "sinkk") || !strings.Contains(out, "sink is required") {
		t.Fatalf("lint of a misspelt field: exit %d\n%s", code, out)
	}
}

// TestExampleSinkDownFromTheStart: search down for every message of the
// example pipeline has no coverage rows at all; its gap must still be
// found, and the replay stream must close it (the example names its
// sinks, so the plan does not depend on a sink having rows).
func TestExampleSinkDownFromTheStart(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(example(t, "pipeline.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	down := strings.Replace(string(src), "max: 4) == 0", "max: 4) >= 0", 1)
	if down == string(src) {
		t.Fatal("pipeline.yaml: search's failing case is not where the test expects it")
	}
	pipeline := filepath.Join(dir, "pipeline.yaml")
	if err := os.WriteFile(pipeline, []byte(down), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, code := command(t, dir, "-c", pipeline); code != 0 {
		t.Fatalf("the pipeline: exit %d\n%s", code, out)
	}
	if got := held(t, dir, "search"); len(got) > 0 {
		t.Fatalf("search holds %v: it was down for every message", got)
	}
	if out, code := command(t, dir, "-c", example(t, "replay.yaml")); code != 0 {
		t.Fatalf("the replay: exit %d\n%s", code, out)
	}
	all := make([]uint64, 120)
	for i := range all {
		all[i] = uint64(i)
	}
	got, _ := committedAndPlan(t, dir)
	if !slices.Equal(held(t, dir, "search"), all) || !slices.Equal(got["search"], all) {
		t.Fatalf("after the replay search holds %v, coverage %v: its gap (every batch) was not found", held(t, dir, "search"), got["search"])
	}
}

// TestReplayLeavesACutRawFileUnverified: a process killed between opening
// a batch's file (truncated) and writing it leaves an empty file in raw,
// unrecorded. The replay's verification of raw's hole must not record it
// as held: raw holds nothing of that batch.
func TestReplayLeavesACutRawFileUnverified(t *testing.T) {
	dir := t.TempDir()
	if out, code := commandEnv(t, dir, []string{"BATCHES=100"}, "-c", example(t, "pipeline.yaml")); code != 0 {
		t.Fatalf("the pipeline: exit %d\n%s", code, out)
	}
	for id, body := range map[int]string{100: "", 101: `{"id":101}`} {
		if err := os.WriteFile(filepath.Join(dir, "data", "raw", strconv.Itoa(id)+".json"), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if out, code := command(t, dir, "-c", example(t, "replay.yaml")); code != 0 {
		t.Fatalf("the replay: exit %d\n%s", code, out)
	}
	got, _ := committedAndPlan(t, dir)
	if slices.Contains(got["raw"], 100) || !slices.Contains(got["raw"], 101) {
		t.Fatalf("raw's coverage past 99 is %v: want 101 (its file holds the batch) and not 100 (empty, cut short)", got["raw"][min(len(got["raw"]), 100):])
	}
}
