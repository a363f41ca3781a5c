package object

import (
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// TestAppendNoRangesMayHaveLanded: a checkpoint that carries no ranges
// touches no sink, retried or not: nothing to write, nothing to look for,
// and no panic.
func TestAppendNoRangesMayHaveLanded(t *testing.T) {
	s := openDirStore(t, t.TempDir())
	d := coverage.Destination{Sink: "lake", Topic: "t"}
	for _, ranges := range [][]coverage.DestinationRanges{nil, {{Destination: d}}} {
		c := durable.Checkpoint{Writer: "w", Name: "empty", Ranges: ranges, MayHaveLanded: true}
		if err := s.Append(ctx, c); err != nil {
			t.Fatalf("empty checkpoint %v with MayHaveLanded: %v", ranges, err)
		}
	}
	if cov, err := s.Coverage(ctx, durable.Filter{}); err != nil || len(cov) != 0 {
		t.Fatalf("coverage after empty checkpoints: %v, %v", cov, err)
	}
}
