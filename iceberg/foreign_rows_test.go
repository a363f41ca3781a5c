package iceberg_test

import (
	"context"
	"errors"
	"testing"

	"github.com/covmirror/covmirror/compaction"
	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/tabletest"
	"github.com/covmirror/covmirror/recovery"
)

// The reader validates each run of equal destinations once; a row naming
// the zero destination ("", "", 0) first in its record batch is validated
// too, and refused.
func TestReaderRefusesTheZeroDestination(t *testing.T) {
	ctx := context.Background()
	for name, row := range map[string]tabletest.ForeignRow{
		"empty sink only (control: refused)":       tabletest.Valid("", "orders", 0, 20, 30),
		"empty sink and topic, partition 0 (hole)": tabletest.Valid("", "", 0, 20, 30),
	} {
		t.Run(name, func(t *testing.T) {
			tbl := tabletest.EmbeddedTable(t)
			if err := tabletest.AppendForeign(t, tbl, row); err != nil {
				t.Skipf("iceberg-go refused the row: %v", err)
			}
			loaded, err := tbl.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cov, err := iceberg.ReadCoverage(ctx, loaded, durable.Filter{})
			t.Logf("ReadCoverage: %v", err)
			if !errors.Is(err, coverage.ErrCorrupt) {
				t.Errorf("ReadCoverage: err %v, coverage %v; want ErrCorrupt", err, cov)
			}
		})
	}
}

// Downstream of the reader, the planner and compaction refuse the zero
// destination's row with ErrCorrupt too, rather than planning a task for
// topic "" or failing as if a caller had passed a bad record.
func TestZeroDestinationRefusedDownstream(t *testing.T) {
	ctx := context.Background()
	tbl := tabletest.EmbeddedTable(t)
	for i := range 2 {
		if err := tbl.Append(ctx, durable.Checkpoint{Name: "c" + string(rune('0'+i)), Writer: "pod", Ranges: []coverage.DestinationRanges{
			{Destination: coverage.Destination{Sink: "raw", Topic: "orders"}, Ranges: []coverage.Range{{Start: uint64(10 * i), End: uint64(10*i + 10)}}},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tabletest.AppendForeign(t, tbl, tabletest.Valid("", "", 0, 20, 30)); err != nil {
		t.Skip(err)
	}
	tasks, err := recovery.Plan(ctx, tbl, recovery.PlanOptions{})
	t.Logf("Plan: err %v", err)
	for _, task := range tasks {
		t.Logf("  task %+v", task)
	}
	if !errors.Is(err, coverage.ErrCorrupt) {
		t.Errorf("Plan: %v with %d tasks, want ErrCorrupt", err, len(tasks))
	}
	res, err := compaction.Compact(ctx, tbl, compaction.Options{MinSmallFiles: 1})
	t.Logf("Compact: %+v, err %v", res, err)
	if !errors.Is(err, coverage.ErrCorrupt) {
		t.Errorf("Compact: %v, want ErrCorrupt", err)
	}
}
