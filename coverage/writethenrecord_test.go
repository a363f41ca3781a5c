package coverage

import (
	"context"
	"errors"
	"testing"
)

// A record that fails after its write landed says so in Op, even where the
// store's own error is already an *Error: a caller tells a lag (the sink
// holds the batches, only their record failed) from a failed write by it.
func TestWriteThenRecordSaysTheWriteLanded(t *testing.T) {
	ctx := context.Background()
	s := NewInMemory()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	d := Destination{Sink: "lake", Topic: "orders"}
	wrote := false
	err := WriteThenRecord(ctx, s, d, Range{Start: 1, End: 2}, func(context.Context) error { wrote = true; return nil })
	var ce *Error
	if !wrote || !errors.As(err, &ce) || ce.Op != "record after write" || !errors.Is(err, ErrClosed) {
		t.Fatalf("record on a closed store after the write: wrote %v, err %v (%#v); want Op \"record after write\" wrapping ErrClosed", wrote, err, ce)
	}
	err = WriteThenRecord(ctx, s, d, Range{Start: 1, End: 2}, func(context.Context) error { return errors.New("sink down") })
	if !errors.As(err, &ce) || ce.Op != "write" {
		t.Fatalf("failed write: err %v, want Op \"write\"", err)
	}
}
