// Package testseed owns the one seed setting of every randomized test in
// the module. It is for tests only.
//
// The rule, stated once: a test's seed is -seed N when N is not zero, else
// COVMIRROR_SEED=N when that is set and not zero, else a fresh seed from
// the clock (a test that loops over several seeds runs its default seeds
// instead). Either way the seed is logged, so it shows beside a failure,
// with the exact command that replays it:
//
//	go test ./local -run '^TestFaultsNeverLead$' -seed 1234
//	COVMIRROR_SEED=1234 go test ./local -run '^TestFaultsNeverLead$'
//
// Every test selected by -run gets the given seed itself, not a value
// derived from it, so the number a failure message prints is the number
// to replay. A test needing several independent streams draws them from
// the one seed (rand.NewPCG(seed, k) for stream k).
//
// The invariant it serves: every randomized test that fails can be run
// again on the same sequence, because the seed it used is always printed
// with how to run it again.
package testseed

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Env is the environment variable that sets the seed when -seed is not
// given: COVMIRROR_SEED=N go test ./... gives N to every package.
const Env = "COVMIRROR_SEED"

var seedFlag = flag.Uint64("seed", 0, "the seed of the randomized tests (0: "+Env+", else fresh seeds, each printed)")

// tags are the build tags this test binary was built with that change
// which tests run, so a replay command can repeat them (tags_*.go).
var tags []string

// race is set when the binary was built with -race (race.go).
var race bool

// Fixed returns the seed the run was given by -seed or COVMIRROR_SEED,
// and whether one was. A COVMIRROR_SEED that is not a number fails t.
func Fixed(t testing.TB) (uint64, bool) {
	t.Helper()
	if *seedFlag != 0 {
		return *seedFlag, true
	}
	v := os.Getenv(Env)
	if v == "" {
		return 0, false
	}
	s, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("testseed: %s=%q is not a seed (an unsigned integer): %v; unset it or give -seed N", Env, v, err)
	}
	return s, s != 0
}

// Seed returns t's seed (the one given, else a fresh one from the clock)
// and logs it with the command that replays t on it.
func Seed(t testing.TB) uint64 {
	t.Helper()
	s, ok := Fixed(t)
	if !ok {
		s = uint64(time.Now().UnixNano())
	}
	Log(t, s)
	return s
}

// SeedOr is Seed for a caller holding a seed of its own (a conformance
// harness's Seed field): fixed when it is not zero, logged as such, else
// Seed(t).
func SeedOr(t testing.TB, fixed uint64) uint64 {
	t.Helper()
	if fixed == 0 {
		return Seed(t)
	}
	t.Logf("seed %d (fixed by the caller; replay: %s)", fixed, Replay(t, fixed))
	return fixed
}

// Log logs seed beside the command that replays t on it, for a test that
// chooses its seeds itself (a loop over default seeds).
func Log(t testing.TB, seed uint64) {
	t.Helper()
	t.Logf("seed %d (replay: %s)", seed, Replay(t, seed))
}

// Replay is the command that runs t again on seed: go test with this
// binary's -race and build tags, t's package, a -run pattern matching t's
// top-level test alone, and -seed. Not the subtest's own name: a test may
// name its subtests by how many seeds it runs (seed, seed#01), and each
// subtest of the replay gets the same given seed anyway.
func Replay(t testing.TB, seed uint64) string {
	args := []string{"go test"}
	if race {
		args = append(args, "-race")
	}
	if len(tags) > 0 {
		args = append(args, "-tags "+strings.Join(tags, ","))
	}
	args = append(args, pkgDir(), "-run '^"+regexp.QuoteMeta(strings.SplitN(t.Name(), "/", 2)[0])+"$'", "-seed "+strconv.FormatUint(seed, 10))
	return strings.Join(args, " ")
}

// pkgDir is the package under test as a go test argument: go test runs a
// test binary in its package's directory, so the path from the module
// root (the nearest go.mod above) to the working directory.
func pkgDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for root := wd; ; {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			rel, err := filepath.Rel(root, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		up := filepath.Dir(root)
		if up == root {
			return "."
		}
		root = up
	}
}
