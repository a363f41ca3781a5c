package coveragetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// testRecordAllAgainstModel records random batches through
// coverage.RecordAll (the store's RecordBatch where it has one) beside a
// model; a batch with one bad entry must change nothing at all.
func testRecordAllAgainstModel(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed(t, h), 1))
	const universe = 300
	dests := []coverage.Destination{dest("a", 0), dest("a", 1), dest("b", 0)}
	model := map[coverage.Destination][]bool{}
	for _, d := range dests {
		model[d] = make([]bool, universe)
	}
	check := func(what string) {
		t.Helper()
		for _, d := range dests {
			checkModel(t, fmt.Sprintf("%s %s", what, d), covered(t, s, d), model[d])
		}
	}
	for step := range h.ops(60) {
		entries := make([]coverage.Entry, 1+rng.IntN(h.ops(40)))
		for i := range entries {
			start := uint64(rng.IntN(universe - 1))
			end := min(start+1+uint64(rng.IntN(6)), universe)
			entries[i] = coverage.Entry{Destination: dests[rng.IntN(len(dests))], Range: coverage.Range{Start: start, End: end}}
		}
		bad := rng.IntN(4) == 0
		if bad {
			i := rng.IntN(len(entries))
			entries[i].Range.End = entries[i].Range.Start // empty: invalid
		}
		n, err := coverage.RecordAll(ctx, s, entries)
		switch {
		case bad:
			var ce *coverage.Error
			if n != 0 || !errors.Is(err, coverage.ErrInvalidRange) || !errors.As(err, &ce) {
				t.Fatalf("step %d: a batch with an empty range gave (%d, %v), want (0, a *coverage.Error matching ErrInvalidRange)", step, n, err)
			}
		case err != nil || n != len(entries):
			t.Fatalf("step %d: recorded %d of %d: %v", step, n, len(entries), err)
		default:
			for _, e := range entries {
				for b := e.Range.Start; b < e.Range.End; b++ {
					model[e.Destination][b] = true
				}
			}
		}
		check(fmt.Sprintf("step %d", step))
	}
	if n, err := coverage.RecordAll(ctx, s, nil); n != 0 || err != nil {
		t.Fatalf("an empty batch gave (%d, %v), want (0, nil)", n, err)
	}
	if h.Reopen != nil {
		s = h.Reopen(t, s)
		t.Cleanup(func() { _ = s.Close() })
		check("after reopen")
	}
}
