// Package testseed gives randomized tests their seed: a fixed one to
// replay a failure, else a fresh one from the clock, logged either way
// with how to replay it. It is for tests only.
//
// The invariant it serves: every randomized test that fails can be run
// again on the same sequence, because the seed it used is always printed.
package testseed

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// Seed returns fixed, or a fresh seed from the clock when fixed is zero,
// and logs it with replay, how to run it again, in which SEED stands for
// the seed ("-seed SEED", "set Harness.Seed to SEED").
func Seed(t testing.TB, fixed uint64, replay string) uint64 {
	t.Helper()
	s := fixed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: %s)", s, strings.ReplaceAll(replay, "SEED", strconv.FormatUint(s, 10)))
	return s
}
