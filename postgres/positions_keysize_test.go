package postgres

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/testseed"
)

// A cursor within MaxCursorLen but too large for the positions table's
// primary key (PostgreSQL's btree holds index rows of about 2.7 kB; random
// bytes do not compress) must fail alone, as ErrInvalidPosition, before
// any I/O: in a batch or a checkpoint's transaction the server's "index
// row size exceeds" would otherwise fail every position with it, and the
// checkpoint, at every checkpoint after (a cursor is any bytes a record
// API caller PUTs).
func TestPositionCursorPastIndexRowRefused(t *testing.T) {
	schema := freshSchema(t)
	ps, err := OpenPositions(ctx, Options{Pool: adminPool(t), Schema: schema, FoldEvery: -1},
		coverage.Source{Name: "good", Regime: coverage.Stored})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(testseed.Seed(t), 0))
	big := make([]byte, 8<<10)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	fits := big[:maxPositionKeyBytes-len("good")]

	errs := coverage.SavePositions(ctx, ps, []coverage.Position{
		{Source: "good", Partition: 0, Cursor: []byte("c"), Batch: 9},
		{Source: "good", Partition: 1, Cursor: big, Batch: 9},
		{Source: "good", Partition: 2, Cursor: fits, Batch: 9},
	})
	if errs[0] != nil || errs[2] != nil {
		t.Fatalf("an oversized cursor took the batch's other positions with it: %v", errs)
	}
	if !errors.Is(errs[1], coverage.ErrInvalidPosition) {
		t.Fatalf("an oversized cursor: %v, want ErrInvalidPosition", errs[1])
	}
	for part, want := range []int{1, 0, 1} {
		if got, err := ps.Positions(ctx, "good", int32(part)); err != nil || len(got) != want {
			t.Fatalf("partition %d holds %d positions (%v), want %d", part, len(got), err, want)
		}
	}

	tier := advTier(t, schema)
	d := coverage.Destination{Sink: coverage.RawSink, Topic: "good", Partition: 0}
	c := durable.Checkpoint{Writer: "w", Name: "1", Ranges: oneRange(d, 0, 20)}
	saved, refused, err := ps.AppendWithPositions(ctx, tier, c, []coverage.Position{
		{Source: "good", Partition: 0, Cursor: []byte("d"), Batch: 19},
		{Source: "good", Partition: 1, Cursor: big, Batch: 19},
	})
	if err != nil {
		t.Fatalf("an oversized cursor failed the whole checkpoint: %v", err)
	}
	if saved != 1 || len(refused) != 1 || !errors.Is(refused[0], coverage.ErrInvalidPosition) {
		t.Fatalf("saved %d, refused %v; want 1 and the oversized one", saved, refused)
	}
	if ok, err := tier.Landed(ctx, "w", "1"); err != nil || !ok {
		t.Fatalf("the checkpoint did not land: %v, %v", ok, err)
	}
}
