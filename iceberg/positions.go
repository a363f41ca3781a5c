package iceberg

import (
	"context"
	"crypto/rand"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// PositionsTableName is the default name of the positions table, beside the
// coverage table in the same namespace.
const PositionsTableName = "positions"

// Positions is the positions table as a coverage.PositionStore: each saved
// position is one append commit, reads are scans. Broker-managed and
// unknown sources are refused before anything is written.
type Positions struct {
	table  *Table
	writer string
	gate   *coverage.PositionGate
}

var _ coverage.PositionStore = (*Positions)(nil)

// OpenPositions opens (or creates) the positions table named name (zero
// value: PositionsTableName) in opts.Namespace, for the configured sources.
func OpenPositions(ctx context.Context, cat catalog.Catalog, opts Options, name, writer string, sources ...coverage.Source) (*Positions, error) {
	gate, err := coverage.NewPositionGate(sources)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = PositionsTableName
	}
	t, err := openTable(ctx, cat, opts, name, PositionsSchema(), PositionsSpec(), table.UnsortedSortOrder, KindPositions)
	if err != nil {
		return nil, err
	}
	return &Positions{table: t, writer: writer, gate: gate}, nil
}

// Table is the underlying table.
func (p *Positions) Table() *Table { return p.table }

// SavePosition implements coverage.PositionStore with one append commit.
func (p *Positions) SavePosition(ctx context.Context, pos coverage.Position) error {
	return p.SavePositions(ctx, []coverage.Position{pos})[0]
}

var _ coverage.PositionBatcher = (*Positions)(nil)

// SavePositions implements coverage.PositionBatcher: every position the
// gate lets through is saved in one append commit, all or none.
func (p *Positions) SavePositions(ctx context.Context, ps []coverage.Position) []error {
	errs := make([]error, len(ps))
	var keep []int
	for i, pos := range ps {
		// The cursor is a binary column: no bound beyond the gate's.
		if errs[i] = p.gate.CheckSave(ctx, pos, math.MaxInt); errs[i] == nil {
			keep = append(keep, i)
		}
	}
	if len(keep) == 0 {
		return errs
	}
	rows := make([]coverage.Position, len(keep))
	for k, i := range keep {
		rows[k] = ps[i]
	}
	name := p.writer + "/position/" + rand.Text() // fresh: never looked up
	st := stamp{name: name, writer: p.writer, payload: durable.Digest("position", p.writer, nil, int64(len(rows)))}
	err := p.table.appendRows(ctx, st, false, func(schema *arrow.Schema) (arrow.RecordBatch, error) {
		return positionRecord(schema, rows, p.writer, time.Now())
	})
	if err != nil {
		for _, i := range keep {
			errs[i] = coverage.DestinationError("save position", coverage.Destination{Topic: ps[i].Source, Partition: ps[i].Partition}, err)
		}
	}
	return errs
}

// positionRecord lays ps out as rows of the positions table.
func positionRecord(schema *arrow.Schema, ps []coverage.Position, writer string, now time.Time) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	ts, err := arrow.TimestampFromTime(now, arrow.Microsecond)
	if err != nil {
		return nil, err
	}
	for _, pos := range ps {
		if err := appendPosition(b, schema, pos, writer, ts); err != nil {
			return nil, err
		}
	}
	return b.NewRecordBatch(), nil
}

func appendPosition(b *array.RecordBuilder, schema *arrow.Schema, pos coverage.Position, writer string, ts arrow.Timestamp) error {
	for i, f := range schema.Fields() {
		switch f.Name {
		case ColSource:
			b.Field(i).(*array.StringBuilder).Append(pos.Source)
		case ColSourceKey:
			b.Field(i).(*array.StringBuilder).Append(PathKey(pos.Source))
		case ColPartition:
			b.Field(i).(*array.Int32Builder).Append(pos.Partition)
		case ColCursor:
			b.Field(i).(*array.BinaryBuilder).Append(pos.Cursor)
		case ColBatch:
			b.Field(i).(*array.Int64Builder).Append(int64(pos.Batch))
		case ColWriter:
			b.Field(i).(*array.StringBuilder).Append(writer)
		case ColSavedAt:
			b.Field(i).(*array.TimestampBuilder).Append(ts)
		default:
			if !f.Nullable {
				return fmt.Errorf("%w: required column %s is not one covmirror writes", ErrIncompatibleTable, f.Name)
			}
			b.Field(i).AppendNull()
		}
	}
	return nil
}

// Positions implements coverage.PositionStore.
func (p *Positions) Positions(ctx context.Context, source string, partition int32) ([]coverage.Position, error) {
	if err := p.gate.Check(ctx, "positions", source, partition); err != nil {
		return nil, err
	}
	dest := coverage.Destination{Topic: source, Partition: partition}
	tbl, err := p.table.Load(ctx)
	if err != nil {
		return nil, coverage.DestinationError("positions", dest, err)
	}
	out := []coverage.Position{}
	if tbl.CurrentSnapshot() == nil {
		return out, nil
	}
	filter := ice.NewAnd(ice.EqualTo(ice.Reference(ColSourceKey), PathKey(source)),
		ice.NewAnd(ice.EqualTo(ice.Reference(ColSource), source), ice.EqualTo(ice.Reference(ColPartition), partition)))
	_, records, err := tbl.Scan(table.WithRowFilter(filter), table.WithSelectedFields(ColCursor, ColBatch)).ToArrowRecords(ctx)
	if err != nil {
		return nil, coverage.DestinationError("positions", dest, fmt.Errorf("%w: scanning %s: %w", coverage.ErrUnavailable, p.table.Name(), err))
	}
	for rec, err := range records {
		if err != nil {
			return nil, coverage.DestinationError("positions", dest, fmt.Errorf("%w: reading %s: %w", coverage.ErrUnavailable, p.table.Name(), err))
		}
		cursors, okC := rec.Column(int(rec.Schema().FieldIndices(ColCursor)[0])).(*array.Binary)
		batches, okB := rec.Column(int(rec.Schema().FieldIndices(ColBatch)[0])).(*array.Int64)
		if !okC || !okB {
			rec.Release()
			return nil, fmt.Errorf("%w: scan of %s returned %s", ErrIncompatibleTable, p.table.Name(), rec.Schema())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			out = append(out, coverage.Position{Source: source, Partition: partition,
				Cursor: slices.Clone(cursors.Value(i)), Batch: uint64(batches.Value(i))})
		}
		rec.Release()
	}
	slices.SortFunc(out, coverage.ComparePositions)
	return slices.CompactFunc(out, func(a, b coverage.Position) bool { return coverage.ComparePositions(a, b) == 0 }), nil
}

// Close implements coverage.PositionStore.
func (p *Positions) Close() error {
	p.gate.Close()
	return nil
}
