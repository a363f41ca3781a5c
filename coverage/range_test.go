package coverage

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
)

func TestParseRange(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Range
		err  string
	}{
		{in: "1:6", want: Range{1, 6}},
		{in: " 0 : 18446744073709551615 ", want: Range{0, math.MaxUint64}},
		{in: "5:5", err: "is empty"},
		{in: "6:1", err: "is inverted"},
		{in: "6", err: "is not START:END"},
		{in: "-1:4", err: "start of"},
		{in: "1:18446744073709551616", err: "end of"},
	} {
		got, err := ParseRange(c.in)
		if c.err == "" {
			if err != nil || got != c.want {
				t.Errorf("ParseRange(%q) = %v, %v; want %v", c.in, got, err, c.want)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidRange) || !strings.Contains(err.Error(), c.err) {
			t.Errorf("ParseRange(%q) error %v; want ErrInvalidRange saying %q", c.in, err, c.err)
		}
	}
}

func TestRangeOfRefusesOverflowAndEmpty(t *testing.T) {
	if r, err := RangeOf(math.MaxUint64-2, 2); err != nil || r != (Range{math.MaxUint64 - 2, math.MaxUint64}) {
		t.Fatalf("largest range: %v, %v", r, err)
	}
	if _, err := RangeOf(math.MaxUint64-2, 3); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("overflow: %v", err)
	}
	if _, err := RangeOf(7, 0); !errors.Is(err, ErrInvalidRange) {
		t.Fatalf("zero count: %v", err)
	}
}

func TestErrorSaysWhatAndWhere(t *testing.T) {
	s := NewInMemory()
	d := Destination{Sink: "lake", Topic: "orders/eu", Partition: 3}
	err := s.Record(context.Background(), d, Range{Start: 9, End: 4})
	want := `coverage: record lake/"orders/eu"/3 [9,4): invalid range: [9,4) is inverted (end must be greater than start)`
	if err == nil || err.Error() != want {
		t.Fatalf("got %q\nwant %q", err, want)
	}
	var ce *Error
	if !errors.As(err, &ce) || ce.Op != "record" || ce.Destination != d || ce.Range != (Range{9, 4}) {
		t.Fatalf("error fields: %+v", ce)
	}
}

func TestWriteThenRecordRecordsAfterCancelledAck(t *testing.T) {
	s := NewInMemory()
	ctx, cancel := context.WithCancel(context.Background())
	d := Destination{Sink: "lake", Topic: "t"}
	err := WriteThenRecord(ctx, s, d, Range{1, 2}, func(context.Context) error {
		cancel() // the sink acked, then the caller gave up
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	set, _ := s.Covered(context.Background(), d)
	if !set.Contains(1) {
		t.Fatal("an acknowledged write went unrecorded because the context was cancelled afterwards")
	}
}

func TestSafePositionIgnoresPositionsBeyondRawGap(t *testing.T) {
	raw, _ := NewRangeSet(Range{5, 10}, Range{11, 20})
	stored := []Position{
		{Source: "f", Cursor: []byte("a"), Batch: 3},  // behind raw: lagging, allowed
		{Source: "f", Cursor: []byte("b"), Batch: 9},  // last batch of raw's first run
		{Source: "f", Cursor: []byte("c"), Batch: 15}, // beyond the hole at 10
	}
	p, ok := SafePosition(stored, &raw)
	if !ok || string(p.Cursor) != "b" {
		t.Fatalf("got %+v, %v; want cursor b", p, ok)
	}
	var empty RangeSet
	if _, ok := SafePosition(stored, &empty); ok {
		t.Fatal("a position was trusted with no raw coverage at all")
	}
}

// TestMillionInOrderAddsKeepOneRange checks the memory claim: the set's size
// follows its ranges, not its additions.
func TestMillionInOrderAddsKeepOneRange(t *testing.T) {
	var s RangeSet
	var before, after runtime.MemStats
	_ = s.Add(Range{0, 1})
	runtime.GC()
	runtime.ReadMemStats(&before)
	for b := uint64(1); b < 1_000_000; b++ {
		if err := s.Add(Range{b, b + 1}); err != nil {
			t.Fatal(err)
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if s.Len() != 1 || s.Batches() != 1_000_000 {
		t.Fatalf("after 1,000,000 in-order adds: %d ranges, %d batches", s.Len(), s.Batches())
	}
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<10 {
		t.Fatalf("live heap grew by %d bytes over 1,000,000 adds that leave one range", grown)
	}
}
