package covmap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/recovery"
)

// Gap is one gap of the durable tier: a sink's range that the reference
// covers and the sink lacks, or, where Destination.Sink is the reference, a
// hole in the reference's own coverage.
type Gap struct {
	Destination coverage.Destination
	Range       coverage.Range
	// Since is when the committed rows first showed the gap, by their
	// recorded_at (recovery.Dating, as the gap metrics date it): the
	// earliest reference row over it, for a sink's gap; for a hole of the
	// reference, the first moment rows of the partition lay on both sides
	// of it or over it. Nil when no row shows it (a hole the acked extent
	// alone reveals). A row merged by compaction keeps the latest
	// recorded_at of the rows it merged, so the gap may be older than
	// Since: never younger.
	Since *time.Time
	// Kind is recovery.KindReplay (or KindVerifyReference for a hole of
	// the reference), or the held kind a gap state gives it: refused,
	// unrecoverable, waived. A held gap is still a gap, out of the
	// replay plan only.
	Kind recovery.TaskKind
	// Decision is the recorded decision behind a held kind; nil otherwise.
	Decision *recovery.Decision
}

// Committed is the durable tier as of one table snapshot.
type Committed struct {
	Reference string
	// SnapshotID is the table snapshot read; zero for an empty table.
	SnapshotID int64
	// CommittedAt is when that snapshot was committed, the age of what the
	// map shows; zero where the source has none (an empty table, or a
	// source that is not an Iceberg table): the page then shows the read's
	// time instead.
	CommittedAt time.Time
	// Covered is each destination's committed coverage.
	Covered map[coverage.Destination]*coverage.RangeSet
	// Gaps are ordered by destination and start.
	Gaps []Gap
	// Note says what the reader could not establish exactly (empty when
	// everything is exact).
	Note string
}

// Source is the durable tier's committed coverage and gaps.
type Source interface {
	Committed(ctx context.Context) (Committed, error)
}

// Pending is one destination's ranges recorded by this pod and not yet in a
// committed checkpoint.
type Pending struct {
	Destination coverage.Destination
	Ranges      []coverage.Range
	// Since is when the oldest pending record was made; nil if unknown.
	Since *time.Time
}

// PendingSource is this pod's pending coverage.
type PendingSource interface {
	Pending(ctx context.Context) ([]Pending, error)
}

// LocalPending reads pending ranges from the pod's local tier.
type LocalPending struct{ Store *local.Store }

// Pending returns the store's pending ranges per destination.
func (l LocalPending) Pending(ctx context.Context) ([]Pending, error) {
	if l.Store == nil {
		return nil, errors.New("covmap: LocalPending.Store is nil: pass the pod's local.Store")
	}
	diag, err := l.Store.Diagnostics(ctx)
	if err != nil {
		return nil, fmt.Errorf("covmap: reading the local tier's pending ranges: %w", err)
	}
	var out []Pending
	for _, d := range diag.Destinations {
		if len(d.Pending) > 0 {
			out = append(out, Pending{Destination: d.Destination, Ranges: d.Pending, Since: d.OldestPending})
		}
	}
	return out, nil
}

// TableSource reads the coverage table: gaps through recovery.Plan, as the
// gaps command and the recovery worker do, and covered ranges and gap ages
// from a scan of the same snapshot.
type TableSource struct {
	Table *iceberg.Table
	// Reference is raw's sink name. Zero value: coverage.RawSink.
	Reference string
	// Extents, when set, gives each read the source's acked extents
	// (recovery.PlanOptions.Extents): raw's holes are looked for over them
	// too, and drawn. Zero value: none known.
	Extents func() []coverage.Extent
	// Sinks are sinks every topic is written to, drawn besides those with
	// rows (recovery.PlanOptions.Sinks). Zero value: the sinks with rows.
	Sinks []string
	// TopicSinks are the named sinks per topic, in place of Sinks for its
	// keys (recovery.PlanOptions.TopicSinks): a sink is drawn missing only
	// in the topics it is named for and those it has rows of. Zero value:
	// Sinks for every topic.
	TopicSinks map[string][]string
	// States are the gap states, which give gaps their held kinds. Zero
	// value: Table's own when it keeps them (durable.StateStore), else
	// none.
	States durable.StateStore
}

// consistentReads bounds how often Committed rereads a table that changed
// between its two reads.
const consistentReads = 3

// Committed reads the table. recovery.Plan loads the table itself, so the snapshot
// is compared before and after it: equal snapshots mean the gaps and the
// scanned rows describe the same table state.
func (s TableSource) Committed(ctx context.Context) (Committed, error) {
	if s.Table == nil {
		return Committed{}, errors.New("covmap: TableSource.Table is nil: open the coverage table with iceberg.Open")
	}
	ref := cmp.Or(s.Reference, coverage.RawSink)
	for attempt := 1; ; attempt++ {
		before, err := s.Table.Load(ctx)
		if err != nil {
			return Committed{}, fmt.Errorf("covmap: %w", err)
		}
		var extents []coverage.Extent
		if s.Extents != nil {
			extents = s.Extents()
		}
		opts := recovery.PlanOptions{Reference: ref, MaxBatches: math.MaxUint64, MaxTasks: -1, Extents: extents, Sinks: s.Sinks, TopicSinks: s.TopicSinks}
		if s.States != nil {
			if opts.States, err = s.States.States(ctx, durable.Filter{}); err != nil {
				return Committed{}, fmt.Errorf("covmap: reading the gap states: %w", err)
			}
			if opts.States == nil {
				opts.States = []gapstate.Event{} // none: not "read them from the table"
			}
		}
		tasks, held, err := recovery.PlanHeld(ctx, s.Table, opts)
		if err != nil {
			var nre *recovery.NoReferenceError
			if errors.As(err, &nre) {
				return Committed{}, fmt.Errorf("covmap: reference %q has no rows in the coverage table (%w); the table has rows of the sinks %v: configure the sink raw's coverage is recorded under",
					ref, recovery.ErrNoReference, nre.Sinks)
			}
			return Committed{}, fmt.Errorf("covmap: planning the gaps of %s: %w", s.Table.Name(), err)
		}
		after, err := s.Table.Load(ctx)
		if err != nil {
			return Committed{}, fmt.Errorf("covmap: %w", err)
		}
		same := snapshotID(before) == snapshotID(after)
		if !same && attempt < consistentReads {
			continue
		}
		c := Committed{Reference: ref, SnapshotID: snapshotID(after)}
		if snap := after.CurrentSnapshot(); snap != nil {
			c.CommittedAt = time.UnixMilli(snap.TimestampMs).UTC()
		}
		if !same {
			c.Note = fmt.Sprintf("the table changed during each of %d reads: gaps and covered ranges may be one checkpoint apart", consistentReads)
		}
		dating, covered, err := scanRows(ctx, after, ref)
		if err != nil {
			return Committed{}, err
		}
		c.Covered = covered
		c.Gaps = gapsWithAges(tasks, held, dating)
		return c, nil
	}
}

func snapshotID(tbl *table.Table) int64 {
	if s := tbl.CurrentSnapshot(); s != nil {
		return s.SnapshotID
	}
	return 0
}

// scanRows reads every row with its recorded_at: the covered sets per
// destination, and the rows to date the gaps by.
func scanRows(ctx context.Context, tbl *table.Table, ref string) (*recovery.Dating, map[coverage.Destination]*coverage.RangeSet, error) {
	dating := recovery.NewDating(ref)
	covered := map[coverage.Destination]*coverage.RangeSet{}
	err := iceberg.ReadRows(ctx, tbl, durable.Filter{}, true, func(r iceberg.Row) error {
		set := covered[r.Destination]
		if set == nil {
			set = new(coverage.RangeSet)
			covered[r.Destination] = set
		}
		if err := set.Add(r.Range); err != nil {
			return fmt.Errorf("%w: row %s %s: %w", coverage.ErrCorrupt, r.Destination, r.Range, err)
		}
		return dating.Add(r.Destination, r.Range, r.RecordedAt)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("covmap: %w", err)
	}
	return dating, covered, nil
}

// gapsWithAges turns the plan's tasks and held gaps into gaps dated by the
// rows that show them (see Gap.Since), ordered by destination and start.
func gapsWithAges(tasks []recovery.Task, held []recovery.Gap, dating *recovery.Dating) []Gap {
	gaps := make([]Gap, 0, len(tasks)+len(held))
	for _, t := range tasks {
		g := Gap{Destination: t.Destination, Range: t.Range, Kind: cmp.Or(t.Kind, recovery.KindReplay)}
		if at, ok := dating.Since(t); ok {
			g.Since = &at
		}
		gaps = append(gaps, g)
	}
	for _, h := range held {
		// A held gap is a sink's gap, dated as one.
		t := recovery.Task{Destination: coverage.Destination{Sink: h.Sink, Topic: h.Topic, Partition: h.Partition},
			Range: coverage.Range{Start: h.Start, End: h.End}, Kind: recovery.KindReplay}
		g := Gap{Destination: t.Destination, Range: t.Range, Kind: h.Kind, Decision: h.Decision}
		if at, ok := dating.Since(t); ok {
			g.Since = &at
		}
		gaps = append(gaps, g)
	}
	slices.SortStableFunc(gaps, func(a, b Gap) int {
		return cmp.Or(a.Destination.Compare(b.Destination), cmp.Compare(a.Range.Start, b.Range.Start))
	})
	return gaps
}
