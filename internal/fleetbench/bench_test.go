package fleetbench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/covmirror/covmirror/internal/fleetsim"
)

var (
	only         = flag.String("fleet", "", "the scenarios BenchmarkFleet runs, comma-separated (default: all; the baseline always runs)")
	seed         = flag.Uint64("fleet.seed", 1, "the seed of every scenario")
	scenarioName = flag.String("fleet.scenario", "", "the one scenario TestFleetScenario runs (BenchmarkFleet sets it in a process of its own)")
)

// baseline is the scenario every other is compared with, run first.
const baseline = "object-N=1-1s"

// resultLine prefixes the line a scenario's process prints its result on.
const resultLine = "FLEETSIM-RESULT "

// TestFleetScenario runs the scenario -fleet.scenario names and prints its
// result for BenchmarkFleet. Without the flag it has nothing to run.
func TestFleetScenario(t *testing.T) {
	if *scenarioName == "" {
		t.Skip("BenchmarkFleet runs each scenario through this test, in a process of its own (-fleet.scenario)")
	}
	s, err := find(*scenarioName)
	if err != nil {
		t.Fatal(err)
	}
	o := s.opts
	o.Seed = *seed
	body := func(t *testing.T) {
		s.setup(t, &o)
		res, err := fleetsim.Run(context.Background(), o)
		if err != nil {
			t.Fatalf("scenario %s, seed %d: %v", s.name, o.Seed, err)
		}
		out, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("\n%s%s\n", resultLine, out)
	}
	if s.realTime {
		body(t)
		return
	}
	synctest.Test(t, body)
}

// BenchmarkFleet runs every scenario (or those -fleet names) in a process
// of its own and reports its figures beside the baseline's, one pod on
// today's object tier, measured first in the same run: checkpoints a
// second offered and achieved, p50 and p99 latency (fake time, but for
// PostgreSQL), lost races and failures, bytes and requests per
// checkpoint, what the tier retains, the CPU seconds of the rounds, and
// what one key's serialized read-to-write window allows.
func BenchmarkFleet(b *testing.B) {
	var want []string
	if *only != "" {
		want = strings.Split(*only, ",")
	}
	var base fleetsim.Result
	for _, s := range scenarios {
		if s.name != baseline && want != nil && !slices.Contains(want, s.name) {
			continue
		}
		b.Run(s.name, func(b *testing.B) {
			var res fleetsim.Result
			var wall time.Duration
			for range b.N {
				res, wall = runScenario(b, s.name)
			}
			if s.name == baseline {
				base = res
			}
			clock := "fake time"
			if s.realTime {
				clock = "REAL time"
			}
			b.Logf("%s (%s; %.0f s wall)\n%s", s.about, clock, wall.Seconds(), res)
			report(b, res, base)
		})
	}
}

func report(b *testing.B, r, base fleetsim.Result) {
	b.ReportMetric(r.Offered(), "offered-ckpt/s")
	b.ReportMetric(r.Achieved(), "ckpt/s")
	b.ReportMetric(float64(r.P50)/1e6, "p50-ms")
	b.ReportMetric(float64(r.P99)/1e6, "p99-ms")
	b.ReportMetric(float64(r.Tier.LostRaces), "lost-races")
	b.ReportMetric(float64(r.Failed), "failed-ckpts")
	b.ReportMetric(r.WrittenPer(), "B-written/ckpt")
	b.ReportMetric(r.ReadPer(), "B-read/ckpt")
	b.ReportMetric(r.RequestsPer(), "req/ckpt")
	b.ReportMetric(float64(r.Tier.Retained), "retained")
	b.ReportMetric(r.CPU.Seconds(), "cpu-s")
	b.ReportMetric(r.Bound(), "bound-ckpt/s")
	for k, v := range r.Extra {
		b.ReportMetric(v, k)
	}
	if base.Checkpoints > 0 && base.P99 > 0 {
		b.ReportMetric(float64(r.P99)/float64(base.P99), "p99-vs-N=1")
		perPod := func(x fleetsim.Result) float64 { return x.Achieved() / float64(x.Pods) }
		b.ReportMetric(perPod(r)/perPod(base), "per-pod-rate-vs-N=1")
	}
}

// runScenario runs one scenario in a process of its own (this test binary
// running TestFleetScenario) and returns its result and wall time.
func runScenario(b *testing.B, name string) (fleetsim.Result, time.Duration) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFleetScenario$", "-test.count=1", "-test.timeout=20m",
		"-fleet.scenario="+name, fmt.Sprintf("-fleet.seed=%d", *seed))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	began := time.Now()
	out, err := cmd.Output()
	wall := time.Since(began)
	if err != nil {
		b.Fatalf("scenario %s: %v\n%s%s", name, err, out, stderr.Bytes())
	}
	for line := range strings.Lines(string(out)) {
		if rest, ok := strings.CutPrefix(line, resultLine); ok {
			var res fleetsim.Result
			if err := json.Unmarshal([]byte(rest), &res); err != nil {
				b.Fatalf("scenario %s: its result %q: %v", name, rest, err)
			}
			return res, wall
		}
	}
	b.Fatalf("scenario %s printed no result:\n%s%s", name, out, stderr.Bytes())
	return fleetsim.Result{}, wall
}
