package iceberg

import (
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// RecordedAt is keyed by destination, so it cannot say which times belong
// to which entry of a commit that names a destination twice (a checkpoint
// may): a rewrite with times refuses such a commit.
func TestRecordedAtRepeatedDestination(t *testing.T) {
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	c := durable.Checkpoint{Name: "rw", Writer: "compaction", Ranges: []coverage.DestinationRanges{
		{Destination: d, Ranges: []coverage.Range{{Start: 0, End: 10}}},
		{Destination: d, Ranges: []coverage.Range{{Start: 100, End: 110}}},
	}}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	times := RecordedAt{d: {old}}
	if err := times.validate(c); err != nil {
		t.Logf("validate refuses: %v", err)
		return
	}
	schema, err := table.SchemaToArrowSchema(CoverageSchema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := buildRecord(schema, c, time.Now(), times)
	if err != nil {
		t.Logf("buildRecord refuses: %v", err)
		return
	}
	defer rec.Release()
	var at *array.Timestamp
	for i, f := range schema.Fields() {
		if f.Name == ColRecordedAt {
			at = rec.Column(i).(*array.Timestamp)
		}
	}
	second := at.Value(1).ToTime(arrow.Microsecond)
	if second.Equal(old) {
		t.Errorf("%s [100,110), given no time of its own, was written recorded at %s, the time meant for [0,10)", d, second)
	}
}
