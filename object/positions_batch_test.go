package object

import (
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"fmt"
	"github.com/covmirror/covmirror/internal/testseed"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// TestPositionsBatchKeepsTheBound: a batch position that its partition's
// bound drops at once (the partition keeps MaxPositionsPerPartition higher
// ones) stays out of the object even when the batch's other positions
// make the object change and be written.
func TestPositionsBatchKeepsTheBound(t *testing.T) {
	p := openDirPositions(t, t.TempDir(), Options{}, stored)
	var all []coverage.Position
	for i := range MaxPositionsPerPartition {
		pos := coverage.Position{Source: stored.Name, Partition: 0, Batch: uint64(1000 + i), Cursor: fmt.Appendf(nil, "c%d", i)}
		all = append(all, pos)
		if err := p.SavePosition(ctx, pos); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		low := coverage.Position{Source: stored.Name, Partition: 0, Batch: uint64(1 + round), Cursor: []byte("low")}
		other := coverage.Position{Source: stored.Name, Partition: 1, Batch: uint64(5 + round), Cursor: []byte("other")}
		for i, err := range coverage.SavePositions(ctx, p, []coverage.Position{low, other}) {
			if err != nil {
				t.Fatalf("round %d: position %d: %v", round, i, err)
			}
		}
		all = append(all, low)
		checkPositions(t, fmt.Sprintf("round %d", round), p, stored.Name, 0, keptModel(all))
	}
}

// TestPositionsBatchFaultsNeverLead: four clients, each behind faults
// (lost answers, spurious refusals, failed reads) and with few attempts so
// that some batches fail, save batches over every partition of two
// sources at once. Every partition then holds only positions some client
// gave, every position reported saved among them; a retry of the failed
// ones makes it exactly the union.
func TestPositionsBatchFaultsNeverLead(t *testing.T) {
	seed := testseed.Seed(t)
	dir := t.TempDir()
	second := coverage.Source{Name: "landing-files-2", Regime: coverage.Stored}
	sources := []string{stored.Name, second.Name}
	const clients, rounds, partitions = 4, 30, 5
	type key struct {
		source    string
		partition int32
	}
	var mu sync.Mutex
	given := map[key][]coverage.Position{}
	saved := map[key][]coverage.Position{}
	var failed [clients][]coverage.Position
	var wg sync.WaitGroup
	for c := range clients {
		inner, err := OpenDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer inner.Close()
		f := &flakyBlobs{Blobs: inner, rng: rand.New(rand.NewPCG(seed, uint64(c+1))), p: 0.15, counts: map[string]int{}}
		p, err := OpenPositions(ctx, Options{Blobs: f, MaxAttempts: 2, MinBackoff: time.Microsecond, MaxBackoff: time.Millisecond}, stored, second)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				var b []coverage.Position
				for part := range int32(partitions) {
					for _, src := range sources {
						b = append(b, coverage.Position{Source: src, Partition: part, Batch: uint64(r*clients + c), Cursor: fmt.Appendf(nil, "c%d-%d", c, r)})
					}
				}
				errs := coverage.SavePositions(ctx, p, b)
				mu.Lock()
				for i, pos := range b {
					k := key{pos.Source, pos.Partition}
					given[k] = append(given[k], pos)
					if errs[i] == nil {
						saved[k] = append(saved[k], pos)
					} else {
						failed[c] = append(failed[c], pos)
					}
				}
				mu.Unlock()
			}
			t.Logf("client %d: %d failed, faults %v", c, len(failed[c]), f.counts)
		}()
	}
	wg.Wait()
	clean := openDirPositions(t, dir, Options{}, stored, second)
	contains := func(ps []coverage.Position, p coverage.Position) bool {
		return slices.ContainsFunc(ps, func(q coverage.Position) bool { return coverage.ComparePositions(p, q) == 0 })
	}
	nFailed := 0
	for k, g := range given {
		got, err := clean.Positions(ctx, k.source, k.partition)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range got {
			if !contains(g, p) {
				t.Errorf("%v holds %+v, which no client gave", k, p)
			}
		}
		for _, p := range saved[k] {
			if !contains(got, p) {
				t.Errorf("%v lacks %+v, reported saved", k, p)
			}
		}
	}
	for c := range clients {
		nFailed += len(failed[c])
		for i, err := range coverage.SavePositions(ctx, clean, failed[c]) {
			if err != nil {
				t.Fatalf("retrying %+v: %v", failed[c][i], err)
			}
		}
	}
	if nFailed == 0 {
		t.Log("no batch failed: the faults were too rare to test the failed ones")
	}
	for k, g := range given {
		want := slices.Clone(g)
		slices.SortFunc(want, coverage.ComparePositions)
		checkPositions(t, fmt.Sprintf("%v after the retries", k), clean, k.source, k.partition, want)
	}
}
