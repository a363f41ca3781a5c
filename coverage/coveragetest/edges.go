// The scenarios at a Store's edges: bad input, the destinations listing,
// sets independent of the store, in-order records, WriteThenRecord, Close
// and reopening.

package coveragetest

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
)

func testBadInput(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := context.Background()
	good := dest("sink", 0)
	mustRecord(t, s, good, 10, 20)
	cases := []struct {
		name string
		d    coverage.Destination
		r    coverage.Range
		want error
	}{
		{"inverted range", good, coverage.Range{Start: 30, End: 25}, coverage.ErrInvalidRange},
		{"empty range", good, coverage.Range{Start: 20, End: 20}, coverage.ErrInvalidRange},
		{"zero range", good, coverage.Range{}, coverage.ErrInvalidRange},
		{"range past MaxBatchEnd", good, coverage.Range{Start: 1, End: coverage.MaxBatchEnd + 1}, coverage.ErrInvalidRange},
		{"range at the uint64 limit", good, coverage.Range{Start: coverage.MaxBatchEnd, End: math.MaxUint64}, coverage.ErrInvalidRange},
		{"empty sink", coverage.Destination{Topic: "orders"}, coverage.Range{Start: 1, End: 2}, coverage.ErrInvalidDestination},
		{"empty topic", coverage.Destination{Sink: "sink"}, coverage.Range{Start: 1, End: 2}, coverage.ErrInvalidDestination},
		{"negative partition", coverage.Destination{Sink: "sink", Topic: "orders", Partition: -1}, coverage.Range{Start: 1, End: 2}, coverage.ErrInvalidDestination},
		{"non-UTF-8 topic", coverage.Destination{Sink: "sink", Topic: "\xff"}, coverage.Range{Start: 1, End: 2}, coverage.ErrInvalidDestination},
		{"control character in sink", coverage.Destination{Sink: "a\x00b", Topic: "t"}, coverage.Range{Start: 1, End: 2}, coverage.ErrInvalidDestination},
		{"NUL in topic", coverage.Destination{Sink: "a", Topic: "t\x00u"}, coverage.Range{Start: 1, End: 2}, coverage.ErrInvalidDestination},
	}
	for _, c := range cases {
		err := s.Record(ctx, c.d, c.r)
		var ce *coverage.Error
		if !errors.Is(err, c.want) || !errors.As(err, &ce) {
			t.Errorf("%s: got %v, want a *coverage.Error matching %v", c.name, err, c.want)
		}
	}
	if _, err := s.Covered(ctx, coverage.Destination{Sink: "sink"}); !errors.Is(err, coverage.ErrInvalidDestination) {
		t.Errorf("covered of an invalid destination: %v, want ErrInvalidDestination", err)
	}
	expectSet(t, "after bad input", covered(t, s, good), setOf(t, coverage.Range{Start: 10, End: 20}))
	ds, err := s.Destinations(ctx)
	if err != nil || !slices.Equal(ds, []coverage.Destination{good}) {
		t.Fatalf("destinations after bad input: %v, %v", ds, err)
	}
}

func testDestinations(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := context.Background()
	if ds, err := s.Destinations(ctx); err != nil || len(ds) != 0 {
		t.Fatalf("empty store lists %v, %v", ds, err)
	}
	// Names that a careless key encoding would confuse.
	want := []coverage.Destination{
		{Sink: "a", Topic: "b\x01c", Partition: 0},
		{Sink: "a", Topic: "bc", Partition: 0},
		{Sink: "ab", Topic: "c", Partition: 0},
		{Sink: "raw", Topic: "orders", Partition: 2},
		{Sink: "raw", Topic: "orders", Partition: 10},
		{Sink: "raw", Topic: "orders/eu", Partition: 0},
		{Sink: "o'brien\"; drop table x; --", Topic: "t", Partition: 1 << 30},
	}
	for i, d := range slices.Backward(want) {
		mustRecord(t, s, d, uint64(i*10), uint64(i*10+1+i))
	}
	slices.SortFunc(want, coverage.Destination.Compare)
	got, err := s.Destinations(ctx)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("destinations: %v, %v; want %v", got, err, want)
	}
	for i, d := range want {
		set := covered(t, s, d)
		if set.Len() != 1 {
			t.Fatalf("%s: %v, want exactly its own range (entry %d)", d, set.String(), i)
		}
	}
	if set := covered(t, s, dest("never-recorded", 0)); !set.IsEmpty() {
		t.Fatalf("a never-recorded destination covers %v", set.String())
	}
}

func testCoveredIsIndependent(t *testing.T, h Harness) {
	s := open(t, h)
	d := dest("sink", 0)
	mustRecord(t, s, d, 1, 5)
	set := covered(t, s, d)
	if err := set.Add(coverage.Range{Start: 5, End: 100}); err != nil {
		t.Fatal(err)
	}
	expectSet(t, "after mutating a returned set", covered(t, s, d), setOf(t, coverage.Range{Start: 1, End: 5}))
}

func testInOrder(t *testing.T, h Harness) {
	s := open(t, h)
	n := h.InOrderRecords
	if n == 0 {
		n = 10_000
	}
	d := dest("sink", 3)
	for b := range uint64(n) {
		mustRecord(t, s, d, b, b+1)
	}
	got := covered(t, s, d)
	expectSet(t, "in-order records", got, setOf(t, coverage.Range{Start: 0, End: uint64(n)}))
}

func testWriteThenRecord(t *testing.T, h Harness) {
	s := open(t, h)
	ctx := context.Background()
	d := dest("sink", 0)
	r := coverage.Range{Start: 1, End: 3}
	failure := errors.New("sink refused the batch")
	err := coverage.WriteThenRecord(ctx, s, d, r, func(context.Context) error {
		if set := covered(t, s, d); !set.IsEmpty() {
			t.Errorf("coverage %v recorded before the write returned", set.String())
		}
		return failure
	})
	if !errors.Is(err, failure) {
		t.Fatalf("failed write: %v, want it wrapped", err)
	}
	if set := covered(t, s, d); !set.IsEmpty() {
		t.Fatalf("failed write recorded %v", set.String())
	}
	wrote := false
	err = coverage.WriteThenRecord(ctx, s, d, coverage.Range{Start: 3, End: 1}, func(context.Context) error {
		wrote = true
		return nil
	})
	if !errors.Is(err, coverage.ErrInvalidRange) || wrote {
		t.Fatalf("invalid range: err %v, wrote %v; want ErrInvalidRange before any write", err, wrote)
	}
	if err := coverage.WriteThenRecord(ctx, s, d, r, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	expectSet(t, "after acknowledged write", covered(t, s, d), setOf(t, r))
}

func testClosed(t *testing.T, h Harness) {
	s := h.Open(t)
	ctx := context.Background()
	d := dest("sink", 0)
	mustRecord(t, s, d, 1, 2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if err := s.Record(ctx, d, coverage.Range{Start: 2, End: 3}); !errors.Is(err, coverage.ErrClosed) {
		t.Errorf("record after close: %v, want ErrClosed", err)
	}
	if _, err := s.Covered(ctx, d); !errors.Is(err, coverage.ErrClosed) {
		t.Errorf("covered after close: %v, want ErrClosed", err)
	}
	if _, err := s.Destinations(ctx); !errors.Is(err, coverage.ErrClosed) {
		t.Errorf("destinations after close: %v, want ErrClosed", err)
	}
}

func testReopen(t *testing.T, h Harness) {
	s := h.Open(t)
	a, b := dest("a", 0), dest("b", 1)
	mustRecord(t, s, a, 1, 3)
	mustRecord(t, s, a, 4, 6)
	mustRecord(t, s, b, 100, 200)
	s = h.Reopen(t, s)
	t.Cleanup(func() { _ = s.Close() })
	expectSet(t, "a after reopen", covered(t, s, a), setOf(t, coverage.Range{Start: 1, End: 3}, coverage.Range{Start: 4, End: 6}))
	expectSet(t, "b after reopen", covered(t, s, b), setOf(t, coverage.Range{Start: 100, End: 200}))
	mustRecord(t, s, a, 3, 4)
	expectSet(t, "a after closing its hole", covered(t, s, a), setOf(t, coverage.Range{Start: 1, End: 6}))
}
