package coveragetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

// fileSet2 is a second stored source, so that a batch spans sources.
var fileSet2 = coverage.Source{Name: "landing-files-2", Regime: coverage.Stored}

// testBatches saves positions through coverage.SavePositions, a store's
// batch (coverage.PositionBatcher) where it has one: refused positions fail
// alone and store nothing, the rest are stored exactly as single saves
// would, a retried batch adds nothing, and two writers' concurrent batches
// over the same partitions are all kept (union).
func testBatches(t *testing.T, h PositionHarness) {
	s := h.Open(t, fileSet, kafka, fileSet2)
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	const partitions = 4
	want := map[string]map[int32][]coverage.Position{}
	keep := func(p coverage.Position) {
		if want[p.Source] == nil {
			want[p.Source] = map[int32][]coverage.Position{}
		}
		want[p.Source][p.Partition] = append(want[p.Source][p.Partition], coverage.Position{Source: p.Source, Partition: p.Partition, Cursor: p.Cursor, Batch: p.Batch})
	}

	var batch []coverage.Position
	refused := map[int]error{}
	for part := range int32(partitions) {
		for _, src := range []string{fileSet.Name, fileSet2.Name} {
			batch = append(batch, coverage.Position{Source: src, Partition: part, Cursor: fmt.Appendf(nil, "first-%d", part), Batch: uint64(10 + part)})
		}
		if part == 1 {
			refused[len(batch)] = coverage.ErrBrokerManaged
			batch = append(batch, coverage.Position{Source: kafka.Name, Partition: part, Cursor: []byte("offset=1"), Batch: 1})
			refused[len(batch)] = coverage.ErrUnknownSource
			batch = append(batch, coverage.Position{Source: "nope", Partition: part, Cursor: []byte("x"), Batch: 1})
			refused[len(batch)] = coverage.ErrInvalidPosition
			batch = append(batch, coverage.Position{Source: fileSet.Name, Partition: part, Batch: 99})
		}
	}
	for round := range 2 { // the second is a retry: nothing new
		errs := coverage.SavePositions(ctx, s, batch)
		if len(errs) != len(batch) {
			t.Fatalf("round %d: %d outcomes for %d positions", round, len(errs), len(batch))
		}
		for i, err := range errs {
			var ce *coverage.Error
			switch w, bad := refused[i]; {
			case bad && (!errors.Is(err, w) || !errors.As(err, &ce)):
				t.Errorf("round %d: position %+v: %v, want a *coverage.Error matching %v", round, batch[i], err, w)
			case !bad && err != nil:
				t.Errorf("round %d: position %+v: %v", round, batch[i], err)
			}
		}
	}
	for i, p := range batch {
		if _, bad := refused[i]; !bad {
			keep(p)
		}
	}
	checkStored(t, s, want, partitions)

	// Two writers, each saving one batch per round over every partition of
	// both sources at once.
	var wg sync.WaitGroup
	rounds := h.ops(10)
	var mu sync.Mutex
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				var b []coverage.Position
				for part := range int32(partitions) {
					for _, src := range []string{fileSet.Name, fileSet2.Name} {
						b = append(b, coverage.Position{Source: src, Partition: part, Cursor: fmt.Appendf(nil, "w%d-%03d", w, r), Batch: uint64(100 + r)})
					}
				}
				for i, err := range coverage.SavePositions(ctx, s, b) {
					if err != nil {
						t.Errorf("writer %d round %d: %+v: %v", w, r, b[i], err)
						return
					}
				}
				mu.Lock()
				for _, p := range b {
					keep(p)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	checkStored(t, s, want, partitions)
}

// checkStored fails unless every partition of both stored sources holds
// exactly want's positions, in order.
func checkStored(t *testing.T, s coverage.PositionStore, want map[string]map[int32][]coverage.Position, partitions int32) {
	t.Helper()
	for _, src := range []string{fileSet.Name, fileSet2.Name} {
		for part := range partitions {
			got, err := s.Positions(context.Background(), src, part)
			if err != nil {
				t.Fatal(err)
			}
			w := slices.Clone(want[src][part])
			slices.SortFunc(w, coverage.ComparePositions)
			if !slices.EqualFunc(got, w, func(a, b coverage.Position) bool {
				return a.Source == b.Source && a.Partition == b.Partition && coverage.ComparePositions(a, b) == 0
			}) {
				t.Errorf("%s/%d holds %+v, want %+v", src, part, got, w)
			}
		}
	}
}
