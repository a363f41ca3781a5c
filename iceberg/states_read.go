package iceberg

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// States implements durable.StateStore: a scan of the gap states table's
// current snapshot, filtered by f in the scan where iceberg-go can (data
// files pruned by their column bounds, rows by the residual) and matched
// again after it, one event per ID. A row that is not a valid event is
// coverage.ErrCorrupt.
func (t *Table) States(ctx context.Context, f durable.Filter) ([]gapstate.Event, error) {
	st, err := t.statesTable(ctx)
	if err != nil {
		return nil, err
	}
	tbl, err := st.Load(ctx)
	if err != nil {
		return nil, err
	}
	out, err := ReadStates(ctx, tbl, f)
	if err != nil {
		return nil, fmt.Errorf("iceberg: reading the gap states of %s: %w", t.Name(), err)
	}
	return out, nil
}

// statesFields are the columns States reads, in StatesSchema's order.
var statesFields = []string{ColEventID, ColSink, ColTopic, ColPartition, ColRangeStart, ColRangeEnd, ColState, ColReason, ColDecidedBy, ColDecidedAt}

// statesExpr is f as a row filter of the gap states table: filterExpr
// without the sink key, which this table has not.
func statesExpr(f durable.Filter) ice.BooleanExpression {
	var e ice.BooleanExpression = ice.AlwaysTrue{}
	if f.Sink != "" {
		e = ice.NewAnd(e, ice.EqualTo(ice.Reference(ColSink), f.Sink))
	}
	if f.Topic != "" {
		e = ice.NewAnd(e, ice.EqualTo(ice.Reference(ColTopic), f.Topic))
	}
	if f.Partition != nil {
		e = ice.NewAnd(e, ice.EqualTo(ice.Reference(ColPartition), *f.Partition))
	}
	if len(f.Partitions) > 0 {
		e = ice.NewAnd(e, partitionsExpr(f.PartitionSet()))
	}
	return e
}

// ReadStates is States on already loaded metadata of a gap states table.
func ReadStates(ctx context.Context, tbl *table.Table, f durable.Filter) ([]gapstate.Event, error) {
	out := []gapstate.Event{}
	if tbl.CurrentSnapshot() == nil {
		return out, nil
	}
	scan := tbl.Scan(table.WithRowFilter(statesExpr(f)), table.WithSelectedFields(statesFields...))
	_, records, err := scan.ToArrowRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: scanning %s: %w", coverage.ErrUnavailable, tbl.Identifier(), err)
	}
	// The scan's filter may be a superset (partitionsExpr past
	// maxExactPartitions); the match is exact.
	// One copy per ID, the same whatever the files' order: the first
	// recorded (gapstate.First), so that a retry stamped later by its
	// recorder never outranks a decision recorded between the two.
	match := f.Matcher()
	kept := map[string]gapstate.Event{}
	var order []string
	for rec, err := range records {
		if err != nil {
			return nil, fmt.Errorf("%w: reading %s: %w", coverage.ErrUnavailable, tbl.Identifier(), err)
		}
		err = eachEvent(rec, func(e gapstate.Event) {
			if !match(e.Destination) {
				return
			}
			k, ok := kept[e.ID]
			if !ok {
				order = append(order, e.ID)
			}
			if !ok || gapstate.First(&e, &k) {
				kept[e.ID] = e
			}
		})
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	for _, id := range order {
		out = append(out, kept[id])
	}
	return out, nil
}

// corruptStateAdvice ends the error for a row that is not a valid event.
const corruptStateAdvice = "rows of the gap states table are written only by covmirror: remove it, or roll back the snapshot that added it"

// eachEvent calls fn for each row of rec as an event, validated.
func eachEvent(rec arrow.RecordBatch, fn func(gapstate.Event)) error {
	col := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil
		}
		return rec.Column(idx[0])
	}
	var strs [6]*array.String
	for i, name := range []string{ColEventID, ColSink, ColTopic, ColState, ColReason, ColDecidedBy} {
		s, ok := col(name).(*array.String)
		if !ok {
			return fmt.Errorf("%w: scan returned columns %s", ErrIncompatibleTable, rec.Schema())
		}
		strs[i] = s
	}
	id, sink, topic, state, reason, by := strs[0], strs[1], strs[2], strs[3], strs[4], strs[5]
	partition, okP := col(ColPartition).(*array.Int32)
	start, okS := col(ColRangeStart).(*array.Int64)
	end, okE := col(ColRangeEnd).(*array.Int64)
	at, okA := col(ColDecidedAt).(*array.Timestamp)
	if !okP || !okS || !okE || !okA {
		return fmt.Errorf("%w: scan returned columns %s", ErrIncompatibleTable, rec.Schema())
	}
	unit := at.DataType().(*arrow.TimestampType).Unit
	cols := []arrow.Array{id, sink, topic, state, reason, by, partition, start, end, at}
	for i := 0; i < int(rec.NumRows()); i++ {
		for _, c := range cols {
			// Required, but a file another engine wrote may hold nulls,
			// which Value reads as zero.
			if c.IsNull(i) {
				return fmt.Errorf("%w: a row of event %q holds a null in a required column; %s", coverage.ErrCorrupt, id.Value(i), corruptStateAdvice)
			}
		}
		s, e := start.Value(i), end.Value(i)
		if s < 0 || e < 0 {
			return fmt.Errorf("%w: event %q has the range %d..%d; %s", coverage.ErrCorrupt, id.Value(i), s, e, corruptStateAdvice)
		}
		ev := gapstate.Event{
			ID:          id.Value(i),
			Destination: coverage.Destination{Sink: sink.Value(i), Topic: topic.Value(i), Partition: partition.Value(i)},
			Range:       coverage.Range{Start: uint64(s), End: uint64(e)},
			State:       gapstate.State(state.Value(i)),
			Reason:      reason.Value(i),
			By:          by.Value(i),
			At:          at.Value(i).ToTime(unit).UTC(),
		}
		if err := ev.Validate(); err != nil {
			return fmt.Errorf("%w: a row is not a valid gap state: %w; %s", coverage.ErrCorrupt, err, corruptStateAdvice)
		}
		fn(ev)
	}
	return nil
}
