package iceberg

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	ice "github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// StatesTableName is the name of the gap states table, beside the coverage
// table in the same namespace.
const StatesTableName = "gap_states"

// Column names of the gap states table besides those it shares with the
// coverage table (sink, topic, partition, range_start, range_end). Each
// row is one gapstate.Event; the table is a set of them keyed by event_id.
const (
	ColEventID   = "event_id"   // string, required: gapstate.Event.ID
	ColState     = "state"      // string, required: refused, unrecoverable, waived or reopened
	ColReason    = "reason"     // string, required
	ColDecidedBy = "decided_by" // string, required: gapstate.Event.By
	ColDecidedAt = "decided_at" // timestamptz, required: gapstate.Event.At, to the microsecond
)

// StatesSchema is the gap states table's schema. The table is
// unpartitioned: events are few, and a partition column would be another
// path-safe key to keep.
func StatesSchema() *ice.Schema {
	return ice.NewSchema(0,
		ice.NestedField{ID: 1, Name: ColEventID, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 2, Name: ColSink, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 3, Name: ColTopic, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 4, Name: ColPartition, Type: ice.PrimitiveTypes.Int32, Required: true},
		ice.NestedField{ID: 5, Name: ColRangeStart, Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 6, Name: ColRangeEnd, Type: ice.PrimitiveTypes.Int64, Required: true},
		ice.NestedField{ID: 7, Name: ColState, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 8, Name: ColReason, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 9, Name: ColDecidedBy, Type: ice.PrimitiveTypes.String, Required: true},
		ice.NestedField{ID: 10, Name: ColDecidedAt, Type: ice.PrimitiveTypes.TimestampTz, Required: true},
	)
}

// gapStates is a coverage table's handle on the gap states table: opened
// by Open, or on first use when Open could not.
type gapStates struct {
	enabled bool // a coverage table's: the others keep no states
	mu      sync.Mutex
	table   *Table
}

var _ durable.StateStore = (*Table)(nil)

// statesTable opens (creating it when missing) the gap states table beside
// t, once.
func (t *Table) statesTable(ctx context.Context) (*Table, error) {
	if !t.gap.enabled {
		return nil, fmt.Errorf("%w: %s is not a coverage table opened by iceberg.Open", durable.ErrNoStates, t.Name())
	}
	t.gap.mu.Lock()
	defer t.gap.mu.Unlock()
	if t.gap.table != nil {
		return t.gap.table, nil
	}
	opts := t.opts
	opts.Name = StatesTableName
	st, err := openTable(ctx, t.cat, opts, StatesTableName, StatesSchema(), *ice.UnpartitionedSpec, table.UnsortedSortOrder, KindStates)
	if err != nil {
		return nil, fmt.Errorf("iceberg: the gap states table beside %s: %w", t.Name(), err)
	}
	t.gap.table = st
	return st, nil
}

// StatesTable is the gap states table beside t, opened (or created) if it
// was not yet: the table a replica's engines query, and compaction leaves
// alone.
func (t *Table) StatesTable(ctx context.Context) (*Table, error) { return t.statesTable(ctx) }

// AppendStates implements durable.StateStore: the events (one row each,
// the first of each ID) in one append commit of the gap states table,
// retried on conflict as coverage appends are. Nothing is written unless
// every event is valid. A commit of unknown outcome may land twice when
// retried; readers keep one event per ID, so that is harmless.
func (t *Table) AppendStates(ctx context.Context, events []gapstate.Event) error {
	if len(events) == 0 {
		return nil
	}
	return t.AppendStatesAs(ctx, events[0].By, events)
}

// AppendStatesAs is AppendStates with the writer its snapshot summary
// names (AppendStates names the first event's decider): a replicator
// copying other deciders' events names itself.
func (t *Table) AppendStatesAs(ctx context.Context, writer string, events []gapstate.Event) error {
	if err := durable.ValidateStates(events); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	return t.appendStates(ctx, writer, events)
}

// appendStates is AppendStatesAs without the validation: tests write rows
// another engine could have.
func (t *Table) appendStates(ctx context.Context, writer string, events []gapstate.Event) error {
	st, err := t.statesTable(ctx)
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(events))
	var rows []gapstate.Event
	for _, e := range events {
		if !seen[e.ID] {
			seen[e.ID] = true
			rows = append(rows, e)
		}
	}
	// A fresh name: the commit loop looks it up after an unknown outcome.
	stp := stamp{name: "states/" + rand.Text(), writer: writer, payload: statesDigest(rows)}
	if err := st.appendRows(ctx, stp, false, func(schema *arrow.Schema) (arrow.RecordBatch, error) {
		return statesRecord(schema, rows)
	}); err != nil {
		return fmt.Errorf("iceberg: recording %d gap states in %s: %w", len(rows), st.Name(), err)
	}
	return nil
}

// statesDigest binds a states commit's name to the IDs it carries.
func statesDigest(events []gapstate.Event) string {
	ids := make([]string, len(events))
	for i, e := range events {
		ids[i] = e.ID
	}
	slices.Sort(ids)
	h := sha256.New()
	for _, id := range ids {
		h.Write([]byte(id))
		h.Write([]byte{0})
	}
	return "states:" + hex.EncodeToString(h.Sum(nil))
}

// statesRecord lays events out in the table's arrow schema, by column
// name: a nullable column another engine added stays null, a required one
// is ErrIncompatibleTable.
func statesRecord(schema *arrow.Schema, events []gapstate.Event) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, e := range events {
		at, err := arrow.TimestampFromTime(e.At.UTC(), arrow.Microsecond)
		if err != nil {
			return nil, fmt.Errorf("iceberg: decided_at %s of event %q: %w", e.At, e.ID, err)
		}
		for i, f := range schema.Fields() {
			var v any
			switch f.Name {
			case ColEventID:
				v = e.ID
			case ColSink:
				v = e.Sink
			case ColTopic:
				v = e.Topic
			case ColPartition:
				v = e.Partition
			case ColRangeStart:
				v = int64(e.Start)
			case ColRangeEnd:
				v = int64(e.End)
			case ColState:
				v = string(e.State)
			case ColReason:
				v = e.Reason
			case ColDecidedBy:
				v = e.By
			case ColDecidedAt:
				v = at
			}
			if err := appendValue(b.Field(i), f, v); err != nil {
				return nil, err
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// appendValue appends v to a column builder of its type, or a null to a
// nullable column covmirror does not write.
func appendValue(col array.Builder, f arrow.Field, v any) error {
	ok := true
	switch v := v.(type) {
	case nil:
		if !f.Nullable {
			return fmt.Errorf("%w: required column %s is not one covmirror writes", ErrIncompatibleTable, f.Name)
		}
		col.AppendNull()
	case string:
		var sb *array.StringBuilder
		if sb, ok = col.(*array.StringBuilder); ok {
			sb.Append(v)
		}
	case int32:
		var ib *array.Int32Builder
		if ib, ok = col.(*array.Int32Builder); ok {
			ib.Append(v)
		}
	case int64:
		var lb *array.Int64Builder
		if lb, ok = col.(*array.Int64Builder); ok {
			lb.Append(v)
		}
	case arrow.Timestamp:
		var tb *array.TimestampBuilder
		if tb, ok = col.(*array.TimestampBuilder); ok {
			tb.Append(v)
		}
	}
	if !ok {
		return fmt.Errorf("%w: column %s is %s, not the type covmirror writes", ErrIncompatibleTable, f.Name, f.Type)
	}
	return nil
}
