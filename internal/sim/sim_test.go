package sim

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/covmirror/covmirror/internal/testseed"
)

var (
	stepsFlag = flag.Int("steps", 0, "steps per run with faults on (zero: 150)")
	seedsFlag = flag.Int("seeds", 4, "how many runs, from seed 1, when no seed is given (-seed, COVMIRROR_SEED) and no -simtime (under -short, unless given: 2)")
	simTime   = flag.Duration("simtime", 0, "run seeds from a random first one for this long (make simulate)")
	tierFlag  = flag.String("durable", "", "run every seed on this durable tier (iceberg, object or postgres); empty: by seed%3, 0 iceberg, 1 object, 2 postgres")
)

// tierOf is the durable tier seed runs on: -durable, or by seed%3, so
// that consecutive seeds (make simulate) exercise the three tiers evenly.
// The default four seeds run 3 on iceberg, 1 and 4 on object and 2 on
// PostgreSQL: an iceberg run costs about three of the others under -race,
// so make test-slow is no slower than with two iceberg and two object
// seeds; make test (-short) runs seeds 1 and 2.
func tierOf(seed uint64) string {
	switch {
	case *tierFlag != "":
		return *tierFlag
	case seed%3 == 0:
		return "iceberg"
	case seed%3 == 1:
		return "object"
	default:
		return "postgres"
	}
}

// seedsGiven reports whether -seeds was given on the command line.
func seedsGiven() bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "seeds" })
	return given
}

// TestSimulation runs whole-pod simulations: seeds 1 to -seeds (two under
// -short unless -seeds is given), or the seed given (internal/testseed:
// -seed or COVMIRROR_SEED) alone, or as many as fit in -simtime, each on
// the durable tier tierOf picks. Each
// checks the invariant after every step and that recovery completes once
// faults stop; a failure prints its seed, its tier, the command that
// replays it and the steps that led to it.
func TestSimulation(t *testing.T) {
	var seeds func(yield func(uint64) bool)
	given, replay := testseed.Fixed(t)
	switch {
	case replay:
		seeds = func(yield func(uint64) bool) { yield(given) }
	case *simTime > 0:
		deadline := time.Now().Add(*simTime)
		first := uint64(time.Now().UnixNano())
		seeds = func(yield func(uint64) bool) {
			for s := first; time.Now().Before(deadline) && yield(s); s++ {
			}
		}
	default:
		n := uint64(*seedsFlag)
		if testing.Short() && !seedsGiven() {
			n = min(n, 2) // object and PostgreSQL: an iceberg seed costs about three of those
		}
		seeds = func(yield func(uint64) bool) {
			for s := uint64(1); s <= n && yield(s); s++ {
			}
		}
	}
	var runs, steps int
	tiers := map[string]int{}
	var batches uint64
	faults, ops := map[string]int{}, map[string]int{}
	failed := 0
	for seed := range seeds {
		cfg := Config{Seed: seed, Steps: *stepsFlag, Dir: t.TempDir(), Durable: tierOf(seed)}
		if replay && testing.Verbose() {
			cfg.Trace = func(line string) { t.Log(line) }
		}
		res, err := Run(context.Background(), cfg)
		runs++
		tiers[cfg.Durable]++
		steps += res.Steps
		batches += res.Batches
		for k, n := range res.Faults {
			faults[k] += n
		}
		for k, n := range res.Ops {
			ops[k] += n
		}
		var f *Failure
		if errors.As(err, &f) {
			failed++
			t.Errorf("%v", err)
		} else if err != nil {
			t.Fatalf("seed %d on %s: the simulation itself failed: %v", seed, cfg.Durable, err)
		}
		if replay {
			t.Logf("seed %d: %s\nrates: %+v", seed, res.Summary(), res.Rates)
		}
	}
	t.Logf("%d seeds (iceberg %d, object %d, postgres %d), %d steps, %d batches acked, %d failed",
		runs, tiers["iceberg"], tiers["object"], tiers["postgres"], steps, batches, failed)
	t.Logf("steps by kind: %s", kinds(ops))
	t.Logf("faults injected by kind: %s", kinds(faults))
}

func kinds(m map[string]int) string {
	out := ""
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out += fmt.Sprintf("\n  %-40s %d", k, m[k])
	}
	return out
}
