package coveragetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/testseed"
)

// Harness tells the suite how to get stores of one backend.
type Harness struct {
	// Open returns a new, empty store. The suite closes it.
	Open func(t *testing.T) coverage.Store

	// Reopen, when set, closes s and opens the same storage again, so the
	// suite can check that recorded coverage survives. Leave it nil for a
	// backend without persistence.
	Reopen func(t *testing.T, s coverage.Store) coverage.Store

	// Seed fixes the randomized scenarios; zero takes the test run's seed
	// (-seed or COVMIRROR_SEED), else a fresh one. The seed in use is
	// logged either way.
	Seed uint64

	// InOrderRecords is how many single-batch records the in-order scenario
	// makes; zero means 10,000. Backends with a costly Record lower it.
	InOrderRecords int

	// Light runs the scenarios with a tenth of their operations, for
	// backends where every Record is a catalog commit. The checks are the
	// same.
	Light bool
}

// ops scales a scenario's operation count for light harnesses.
func (h Harness) ops(n int) int {
	if h.Light {
		return max(n/10, 4)
	}
	return n
}

// Run runs every scenario against the harness's backend.
func Run(t *testing.T, h Harness) {
	t.Run("GapScenario", func(t *testing.T) { testGapScenario(t, h) })
	t.Run("ConcurrentOwnersUnion", func(t *testing.T) { testConcurrentOwners(t, h) })
	t.Run("ConcurrentReadersAndWriters", func(t *testing.T) { testConcurrentReaders(t, h) })
	t.Run("NeverCloseUnverifiedGap", func(t *testing.T) { testRandomAgainstModel(t, h) })
	t.Run("RecordAllAgainstModel", func(t *testing.T) { testRecordAllAgainstModel(t, h) })
	t.Run("BadInputChangesNothing", func(t *testing.T) { testBadInput(t, h) })
	t.Run("Destinations", func(t *testing.T) { testDestinations(t, h) })
	t.Run("CoveredIsIndependent", func(t *testing.T) { testCoveredIsIndependent(t, h) })
	t.Run("InOrderRecordsMerge", func(t *testing.T) { testInOrder(t, h) })
	t.Run("WriteThenRecord", func(t *testing.T) { testWriteThenRecord(t, h) })
	t.Run("Closed", func(t *testing.T) { testClosed(t, h) })
	if h.Reopen != nil {
		t.Run("Reopen", func(t *testing.T) { testReopen(t, h) })
	}
}

func open(t *testing.T, h Harness) coverage.Store {
	t.Helper()
	s := h.Open(t)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func seed(t *testing.T, h Harness) uint64 {
	return testseed.SeedOr(t, h.Seed)
}

func dest(sink string, partition int32) coverage.Destination {
	return coverage.Destination{Sink: sink, Topic: "orders", Partition: partition}
}

func mustRecord(t *testing.T, s coverage.Store, d coverage.Destination, start, end uint64) {
	t.Helper()
	if err := s.Record(context.Background(), d, coverage.Range{Start: start, End: end}); err != nil {
		t.Fatalf("record %s [%d,%d): %v", d, start, end, err)
	}
}

func covered(t *testing.T, s coverage.Store, d coverage.Destination) coverage.RangeSet {
	t.Helper()
	set, err := s.Covered(context.Background(), d)
	if err != nil {
		t.Fatalf("covered %s: %v", d, err)
	}
	return set
}

func setOf(t *testing.T, ranges ...coverage.Range) coverage.RangeSet {
	t.Helper()
	s, err := coverage.NewRangeSet(ranges...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func expectSet(t *testing.T, what string, got, want coverage.RangeSet) {
	t.Helper()
	if !got.Equal(&want) {
		t.Fatalf("%s: covered %v, want %v", what, got.String(), want.String())
	}
}

// testGapScenario is the example of docs/design.md: batches 1, 2, 4 and 5 reach the
// sink while 3 fails; a watermark would report 5 and lose 3.
func testGapScenario(t *testing.T, h Harness) {
	s := open(t, h)
	raw, sink := dest(coverage.RawSink, 0), dest("warehouse", 0)
	mustRecord(t, s, raw, 1, 6)
	for _, b := range []uint64{1, 2, 4, 5} {
		mustRecord(t, s, sink, b, b+1)
	}
	rawSet, sinkSet := covered(t, s, raw), covered(t, s, sink)
	gaps := coverage.Gaps(&rawSet, &sinkSet)
	expectSet(t, "gaps after 1,2,4,5", gaps, setOf(t, coverage.Range{Start: 3, End: 4}))
	if sinkSet.Contains(3) {
		t.Fatal("batch 3 failed but is reported covered")
	}
	mustRecord(t, s, sink, 3, 4)
	sinkSet = covered(t, s, sink)
	gaps = coverage.Gaps(&rawSet, &sinkSet)
	if !gaps.IsEmpty() || sinkSet.Len() != 1 {
		t.Fatalf("after recording 3: covered %v, gaps %v", sinkSet.String(), gaps.String())
	}
}

// testConcurrentOwners has two owners of one destination, as during a
// rebalance, record overlapping ranges at once. Last-write-wins would keep one
// owner's ranges and fail.
func testConcurrentOwners(t *testing.T, h Harness) {
	s := open(t, h)
	d := dest("lake", 7)
	// Owner A writes batches in runs of 5 starting at multiples of 8, owner B
	// runs of 4 starting at multiples of 8 plus 3: overlapping, with holes.
	owners := [][]coverage.Range{{}, {}}
	var want coverage.RangeSet
	runs := uint64(h.ops(100))
	for i := uint64(0); i < runs; i++ {
		a := coverage.Range{Start: i * 8, End: i*8 + 5}
		b := coverage.Range{Start: i*8 + 3, End: i*8 + 7}
		owners[0] = append(owners[0], a)
		owners[1] = append(owners[1], b)
		_ = want.Add(a)
		_ = want.Add(b)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, ranges := range owners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, r := range ranges {
				if err := s.Record(context.Background(), d, r); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got := covered(t, s, d)
	expectSet(t, "union of two owners", got, want)
	if got.Len() != int(runs) {
		t.Fatalf("want %d ranges separated by one-batch holes, got %d", runs, got.Len())
	}
}

// testConcurrentReaders reads coverage while writers record, as a pod's
// diagnostics and checkpointer do; under -race it finds unsynchronized
// sharing between a returned set and the store's own.
func testConcurrentReaders(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := context.Background()
	d := dest("lake", 1)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range uint64(h.ops(300)) {
				start := i*4 + uint64(w)*2
				if err := s.Record(ctx, d, coverage.Range{Start: start, End: start + 1}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last uint64
			for range h.ops(100) {
				set, err := s.Covered(ctx, d)
				if err != nil {
					t.Error(err)
					return
				}
				if set.Batches() < last {
					t.Errorf("coverage shrank from %d to %d batches", last, set.Batches())
					return
				}
				last = set.Batches()
				_ = set.Add(coverage.Range{Start: 5000, End: 5001}) // the caller owns its copy
				if _, err := s.Destinations(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got := covered(t, s, d)
	if got.Batches() != uint64(2*h.ops(300)) || got.Contains(5000) {
		t.Fatalf("after concurrent reads and writes: %d batches, %v", got.Batches(), got.String())
	}
}

// testRandomAgainstModel records random ranges, some invalid, into several
// destinations and compares every destination with a naive per-batch model:
// nothing is covered that was not recorded, nothing recorded is missing.
func testRandomAgainstModel(t *testing.T, h Harness) {
	s := open(t, h)
	rng := rand.New(rand.NewPCG(seed(t, h), 0))
	const universe = 300
	dests := []coverage.Destination{dest("a", 0), dest("a", 1), dest("b", 0)}
	model := map[coverage.Destination][]bool{}
	for _, d := range dests {
		model[d] = make([]bool, universe)
	}
	for step := range h.ops(400) {
		d := dests[rng.IntN(len(dests))]
		start := uint64(rng.IntN(universe))
		end := min(start+uint64(rng.IntN(6)), universe) // sometimes empty
		err := s.Record(context.Background(), d, coverage.Range{Start: start, End: end})
		if end <= start {
			if !errors.Is(err, coverage.ErrInvalidRange) {
				t.Fatalf("step %d: empty range [%d,%d) gave %v, want ErrInvalidRange", step, start, end, err)
			}
		} else if err != nil {
			t.Fatalf("step %d: %v", step, err)
		} else {
			for b := start; b < end; b++ {
				model[d][b] = true
			}
		}
		if step%20 == 19 {
			for _, d := range dests {
				checkModel(t, fmt.Sprintf("step %d %s", step, d), covered(t, s, d), model[d])
			}
		}
	}
}

func checkModel(t *testing.T, what string, got coverage.RangeSet, bits []bool) {
	t.Helper()
	for b, want := range bits {
		if got.Contains(uint64(b)) != want {
			if want {
				t.Fatalf("%s: batch %d was recorded but is not covered in %v", what, b, got.String())
			}
			t.Fatalf("%s: batch %d was never recorded but is covered in %v (over-claim)", what, b, got.String())
		}
	}
	if last, ok := got.Last(); ok && last.End > uint64(len(bits)) {
		t.Fatalf("%s: covers %s beyond anything recorded", what, last)
	}
}
