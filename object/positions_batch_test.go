package object

import (
	"fmt"
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
