package compaction

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/childproc"
	"github.com/covmirror/covmirror/internal/testseed"
)

// Child processes (childproc roles) read their settings from these.
const (
	propsEnv    = "COVMIRROR_COMPACTION_PROPS"
	logEnv      = "COVMIRROR_COMPACTION_LOG"
	durationEnv = "COVMIRROR_COMPACTION_DURATION"
	nsEnv       = "COVMIRROR_COMPACTION_NAMESPACE" // empty: the default
)

func TestMain(m *testing.M) {
	childproc.Main(m, map[string]func() error{
		"checkpointer": func() error { return child("checkpointer") },
		"compactor":    func() error { return child("compactor") },
	})
}

func child(role string) error {
	var props map[string]string
	if err := json.Unmarshal([]byte(os.Getenv(propsEnv)), &props); err != nil {
		return err
	}
	cat, err := iceberg.OpenCatalog(ctx, "", props)
	if err != nil {
		return err
	}
	opts := iceberg.Options{CommitTimeout: 5 * time.Minute}
	if ns := os.Getenv(nsEnv); ns != "" {
		opts.Namespace = []string{ns}
	}
	tbl, err := iceberg.Open(ctx, cat, opts)
	if err != nil {
		return err
	}
	duration, _ := time.ParseDuration(os.Getenv(durationEnv))
	deadline := time.Now().Add(duration)
	switch role {
	case "checkpointer":
		log, err := os.OpenFile(os.Getenv(logEnv), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		r := rand.New(rand.NewPCG(uint64(os.Getpid()), 7))
		for i := 0; time.Now().Before(deadline); i++ {
			d := coverage.Destination{Sink: []string{"raw", "lake", "search"}[r.IntN(3)], Topic: "orders", Partition: int32(r.IntN(3))}
			start := uint64(r.IntN(5000))
			rg := coverage.Range{Start: start, End: start + 1 + uint64(r.IntN(5))}
			c := durable.Checkpoint{Name: fmt.Sprintf("ckpt/%d", i), Writer: "checkpointer",
				Ranges: []coverage.DestinationRanges{{Destination: d, Ranges: []coverage.Range{rg}}}}
			if err := tbl.Append(ctx, c); err != nil {
				return err
			}
			// Logged only once committed: the parent checks each is kept.
			if _, err := fmt.Fprintf(log, "%s %d %d %d\n", d.Sink, d.Partition, rg.Start, rg.End); err != nil {
				return err
			}
		}
		return nil
	case "compactor":
		runs, rewritten := 0, 0
		for time.Now().Before(deadline) || duration == 0 {
			res, err := Compact(ctx, tbl, Options{})
			if err != nil {
				return err
			}
			runs++
			rewritten += res.Sinks
			if res.Sinks == 0 {
				time.Sleep(10 * time.Millisecond) // nothing to do yet
			}
		}
		fmt.Printf("compactor: %d runs, %d sink rewrites committed\n", runs, rewritten)
		return nil
	}
	return fmt.Errorf("unknown role %q", role)
}

// startChild starts a child on the table tbl names in the catalog props
// opens.
func startChild(t *testing.T, role string, props map[string]string, tbl *iceberg.Table, logPath string, d time.Duration) *childproc.Child {
	t.Helper()
	propsJSON, _ := json.Marshal(props)
	return childproc.Start(t, role, propsEnv+"="+string(propsJSON), logEnv+"="+logPath, durationEnv+"="+d.String(),
		nsEnv+"="+tbl.Identifier()[0])
}

// TestCheckpointsWhileCompacting: one process checkpoints continuously while
// another compacts repeatedly, for 60 s (10 s with -short). Afterwards the
// table covers exactly the union of every committed checkpoint: none lost,
// nothing added.
func TestCheckpointsWhileCompacting(t *testing.T) {
	d := 60 * time.Second
	if testing.Short() {
		d = 10 * time.Second
	}
	props, tbl := embeddedTable(t)
	checkpointsWhileCompacting(t, props, tbl, d)
}

func checkpointsWhileCompacting(t *testing.T, props map[string]string, tbl *iceberg.Table, d time.Duration) {
	logPath := t.TempDir() + "/committed"
	ckpt := startChild(t, "checkpointer", props, tbl, logPath, d)
	comp := startChild(t, "compactor", props, tbl, "", d)
	ckpt.Wait(t, "checkpointer")
	comp.Wait(t, "compactor")
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	want := map[coverage.Destination]*coverage.RangeSet{}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	for _, line := range lines {
		var sink string
		var p int32
		var r coverage.Range
		if _, err := fmt.Sscanf(line, "%s %d %d %d", &sink, &p, &r.Start, &r.End); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		dest := coverage.Destination{Sink: sink, Topic: "orders", Partition: p}
		if want[dest] == nil {
			want[dest] = new(coverage.RangeSet)
		}
		_ = want[dest].Add(r)
	}
	sameCoverage(t, fmt.Sprintf("after %d checkpoints under compaction", len(lines)), coverageOf(t, tbl), want)
	var runs, rewrites int
	if _, err := fmt.Sscanf(comp.Output(), "compactor: %d runs, %d sink rewrites committed", &runs, &rewrites); err != nil || rewrites == 0 {
		t.Fatalf("the compactor committed no rewrite (%v): %s", err, comp.Output())
	}
	t.Logf("%d checkpoints committed while compacting; %d rewrites committed in %d runs; %d data files left", len(lines), rewrites, runs, dataFiles(t, tbl))
}

// TestCompactionKilledAtRandom kills a compacting process 20 times at random
// moments: the table stays readable with the same coverage, and a final run
// finishes the job.
func TestCompactionKilledAtRandom(t *testing.T) {
	props, tbl := embeddedTable(t)
	kills := 20
	if testing.Short() {
		kills = 5
	}
	compactionKilledAtRandom(t, props, tbl, kills)
}

func compactionKilledAtRandom(t *testing.T, props map[string]string, tbl *iceberg.Table, kills int) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	randomCheckpoints(t, tbl, r, 40)
	before := coverageOf(t, tbl)
	for kill := range kills {
		if kill%5 == 0 {
			randomCheckpoints(t, tbl, r, 10) // fresh small files to compact
			before = coverageOf(t, tbl)
		}
		startChild(t, "compactor", props, tbl, "", 0).KillAfter(t, time.Duration(50+r.IntN(400))*time.Millisecond, fmt.Sprintf("kill %d", kill))
		sameCoverage(t, fmt.Sprintf("after kill %d", kill), coverageOf(t, tbl), before)
	}
	if _, err := Compact(ctx, tbl, Options{}); err != nil {
		t.Fatal(err)
	}
	sameCoverage(t, "after the final run", coverageOf(t, tbl), before)
	if n := dataFiles(t, tbl); n > 3 {
		t.Fatalf("%d data files after the final run, want one per sink", n)
	}
}
