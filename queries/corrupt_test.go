package queries

import (
	"errors"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/mirror"
)

// A row another engine appended that is not a valid range is refused by
// the queries as the Go readers refuse it, with coverage.ErrCorrupt, on
// either binding: taken as coverage, it could close a gap (a null start
// read as zero) or count batches twice.
func TestForeignRowsThatAreNotRangesAreRefused(t *testing.T) {
	valid := tabletest.Valid("lake", "orders", 0, 20, 30)
	with := func(change func(*tabletest.ForeignRow)) tabletest.ForeignRow {
		r := valid
		change(&r)
		return r
	}
	// iceberg-go writes a null in a required column as the type's zero
	// value: a null end reads as 0 (an inverted range) and a null sink or
	// topic as "" (no destination). A null start or partition reads as 0,
	// which is a valid value no reader can tell from a real one.
	cases := map[string]tabletest.ForeignRow{
		"inverted":           tabletest.Valid("lake", "orders", 0, 30, 20),
		"empty":              tabletest.Valid("lake", "orders", 0, 20, 20),
		"negative start":     tabletest.Valid("lake", "orders", 0, -5, 20),
		"negative partition": tabletest.Valid("lake", "orders", -1, 20, 30),
		"empty sink":         tabletest.Valid("", "orders", 0, 20, 30),
		"null end":           with(func(r *tabletest.ForeignRow) { r.End = nil }),
		"null sink":          with(func(r *tabletest.ForeignRow) { r.Sink = nil }),
		"null topic":         with(func(r *tabletest.ForeignRow) { r.Topic = nil }),
	}
	for name, row := range cases {
		t.Run(name, func(t *testing.T) {
			tbl := openTable(t)
			if err := tbl.Append(ctx, iceberg.Commit{Name: "c1", Writer: "pod", Ranges: []coverage.DestinationRanges{
				{Destination: coverage.Destination{Sink: "raw", Topic: "orders"}, Ranges: []coverage.Range{{Start: 0, End: 100}}},
				{Destination: coverage.Destination{Sink: "lake", Topic: "orders"}, Ranges: []coverage.Range{{Start: 0, End: 10}}},
			}}); err != nil {
				t.Fatal(err)
			}
			if err := tabletest.AppendForeign(t, tbl, valid, row); err != nil {
				// Nothing to read back: the table has no such row.
				t.Skipf("iceberg-go now refuses to append it: %v", err)
			}
			loaded, err := tbl.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := iceberg.ReadCoverage(ctx, loaded, iceberg.Filter{}); !errors.Is(err, coverage.ErrCorrupt) {
				t.Errorf("the Go reader: %v, want ErrCorrupt", err)
			}
			if _, err := mirror.Plan(ctx, tbl, mirror.PlanOptions{}); !errors.Is(err, coverage.ErrCorrupt) {
				t.Errorf("the planner: %v, want ErrCorrupt", err)
			}
			for _, binding := range []Binding{ReadParquet, Scan} {
				db, err := Open(ctx, tbl, Options{Binding: binding})
				if err == nil {
					_ = db.Close()
				}
				if !errors.Is(err, coverage.ErrCorrupt) {
					t.Errorf("binding %s: %v, want ErrCorrupt", binding, err)
				} else {
					t.Logf("binding %s: %v", binding, err)
				}
			}
		})
	}
}
