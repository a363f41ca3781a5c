package iceberg

import (
	"fmt"
	"strings"

	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
)

// Column names of the coverage table. The table is a log of covered ranges:
// one row per range a writer checkpointed. Readers union the rows, so a
// duplicated row is harmless and appends from concurrent owners always
// combine. Batch ids are stored as long: the durable tier holds ranges whose
// end is at most MaxBatchEnd.
const (
	ColSink         = "sink"          // string, required: the sink the range was written to
	ColTopic        = "topic"         // string, required
	ColPartition    = "partition"     // int, required
	ColRangeStart   = "range_start"   // long, required: first batch id, inclusive
	ColRangeEnd     = "range_end"     // long, required: batch id after the last, exclusive
	ColWriter       = "writer"        // string, required: the pod or job that checkpointed the row
	ColCheckpointID = "checkpoint_id" // string, required: the checkpoint's unique name
	ColRecordedAt   = "recorded_at"   // timestamptz, required: when the checkpoint was committed
	ColSinkKey      = "sink_key"      // string, required: PathKey(sink), the partition column
)

// MaxBatchEnd is the largest range end the durable table can store: the
// model's own limit, coverage.MaxBatchEnd, which every Store enforces.
const MaxBatchEnd = coverage.MaxBatchEnd

// CoverageSchema is the coverage table's schema. Its partition spec is
// identity(sink_key), so a query for one sink skips the other sinks'
// files. The partition column is a path-safe key derived from the sink
// name (PathKey), never the name itself: iceberg-go puts identity
// partition values into data file paths, and a name such as ".." or
// "../x" would otherwise write outside the table's location.
func CoverageSchema() *ice.Schema {
	return ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: ColSink, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 2, Name: ColTopic, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 3, Name: ColPartition, Type: ice.PrimitiveTypes.Int32, Required: true},
		ice.NestedField{ID: 4, Name: ColRangeStart, Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 5, Name: ColRangeEnd, Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 6, Name: ColWriter, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 7, Name: ColCheckpointID, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 8, Name: ColRecordedAt, Type: ice.PrimitiveTypes.TimestampTz, Required: true},
		ice.NestedField{ID: 9, Name: ColSinkKey, Type: ice.PrimitiveTypes.String, Required: true},
	)
}

// RowGroupRows caps the rows of each Parquet row group covmirror writes.
// Rows are written in CoverageSortOrder, so a row group spans few
// destinations and a reader that filters on topic and partition (a new
// owner's Resume) skips the other groups by their column statistics and
// decodes the few it keeps. iceberg-go's default, 1,048,576 rows, puts a
// whole compacted sink in one group, which no filter can skip; groups much
// smaller than this make every file's footer, which each reader parses
// whole, longer than the group it reads.
const RowGroupRows = 4096

// CompactedFileRows caps the rows of each data file a rewrite (compaction)
// writes. The rows are sorted, so each file holds a narrow band of topics,
// and a reader filtering on one skips the other files by their bounds in
// the manifest, without opening them; a sink's compacted rows in one file
// would have a footer of every row group of the sink to parse.
const CompactedFileRows = 32768

// readBatchRows is the row count of the record batches readers take from
// iceberg-go: two row groups. Its default (131,072) reserves buffers that
// long for every file, which a read of one partition's row groups spends
// most of its time allocating; a batch of one group slows a full read by
// the cost of twice as many batches.
const readBatchRows = 2 * RowGroupRows

// CoverageSortOrder is the coverage table's declared sort order: sink,
// topic, partition, range_start, the order checkpoints (durable.Checkpoint
// holds its destinations sorted) and compaction write their rows in.
func CoverageSortOrder() (table.SortOrder, error) {
	schema := CoverageSchema()
	var fields []table.SortField
	for _, name := range []string{ColSink, ColTopic, ColPartition, ColRangeStart} {
		col, _ := schema.FindFieldByName(name)
		fields = append(fields, table.SortField{SourceIDs: []int{col.ID}, Transform: ice.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst})
	}
	order, err := table.NewSortOrder(1, fields)
	if err != nil {
		return table.SortOrder{}, fmt.Errorf("iceberg: the coverage sort order: %w", err)
	}
	return order, nil
}

// CoverageSpec partitions the coverage table by sink key.
func CoverageSpec() ice.PartitionSpec {
	return ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{9}, FieldID: 1000, Name: ColSinkKey, Transform: ice.IdentityTransform{}})
}

// checkSpec refuses a table whose partition spec is not want's: above all
// a table of the first shape, partitioned by the raw name.
func checkSpec(ident string, tbl *table.Table, want ice.PartitionSpec, kind string) error {
	got := tbl.Spec()
	ok := got.NumFields() == want.NumFields()
	for i := 0; ok && i < got.NumFields(); i++ {
		g, w := got.Field(i), want.Field(i)
		src, found := tbl.Schema().FindFieldByID(g.SourceID())
		wantSrc, _ := SchemaOf(kind).FindFieldByID(w.SourceID())
		ok = found && src.Name == wantSrc.Name && g.Transform.Equals(w.Transform)
	}
	if !ok && want.NumFields() == 0 {
		return fmt.Errorf("%w: table %s is partitioned as %s, want it unpartitioned (a %s table): covmirror never alters a table: drop or rename that table so that covmirror can create its own",
			ErrIncompatibleTable, ident, got.String(), kind)
	}
	if !ok {
		return fmt.Errorf("%w: table %s is partitioned as %s, want %s (a %s table): an older covmirror table partitioned by the raw name, which iceberg-go puts unescaped into paths; covmirror never alters a table: point it at a new table name (Options.Name) and re-checkpoint into it, copying the old rows with %s = PathKey(name) if their history is needed",
			ErrIncompatibleTable, ident, got.String(), want.String(), kind, want.Field(0).Name)
	}
	if k := tbl.Properties()["covmirror.schema"]; k != "" && k != kind {
		return fmt.Errorf("%w: table %s is a %s table, want %s: point covmirror at a new table name", ErrIncompatibleTable, ident, k, kind)
	}
	return nil
}

// SchemaOf is the schema of a table kind.
func SchemaOf(kind string) *ice.Schema {
	switch kind {
	case KindPositions:
		return PositionsSchema()
	case KindStates:
		return StatesSchema()
	}
	return CoverageSchema()
}

// checkSchema reports how an existing table's schema differs from want: a
// missing column or one of another type or optionality. Extra columns are
// allowed (another engine may have added one); nothing is ever altered.
func checkSchema(ident string, got, want *ice.Schema) error {
	var problems []string
	for _, f := range want.Fields() {
		g, ok := got.FindFieldByName(f.Name)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("column %s is missing", f.Name))
		case !g.Type.Equals(f.Type):
			problems = append(problems, fmt.Sprintf("column %s is %s, want %s", f.Name, g.Type, f.Type))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: table %s: %s; covmirror never alters a table: point it at another table name or fix this one",
			ErrIncompatibleTable, ident, strings.Join(problems, "; "))
	}
	return nil
}

// Column names of the positions table, where stored sources (file sets,
// Arrow streams, table shares, REST/WSS) keep their cursors. Like the
// coverage table it is a log: every saved position is a row, and
// coverage.ResumePosition chooses among them against raw's coverage.
const (
	ColSource  = "source"   // string, required
	ColCursor  = "cursor"   // binary, required: the source's opaque cursor
	ColBatch   = "batch"    // long, required: the last raw batch id the cursor covers
	ColSavedAt = "saved_at" // timestamptz, required
	// ColSourceKey is PathKey(source), the partition column.
	ColSourceKey = "source_key" // string, required
)

// PositionsSchema is the positions table's schema, partitioned by source.
func PositionsSchema() *ice.Schema {
	return ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: ColSource, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 2, Name: ColPartition, Type: ice.PrimitiveTypes.Int32, Required: true},
		ice.NestedField{ID: 3, Name: ColCursor, Type: ice.PrimitiveTypes.Binary, Required: true},
		ice.NestedField{ID: 4, Name: ColBatch, Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 5, Name: ColWriter, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 6, Name: ColSavedAt, Type: ice.PrimitiveTypes.TimestampTz, Required: true},
		ice.NestedField{ID: 7, Name: ColSourceKey, Type: ice.PrimitiveTypes.String, Required: true},
	)
}

// PositionsSpec partitions the positions table by source key.
func PositionsSpec() ice.PartitionSpec {
	return ice.NewPartitionSpec(ice.PartitionField{SourceIDs: []int{7}, FieldID: 1000, Name: ColSourceKey, Transform: ice.IdentityTransform{}})
}
