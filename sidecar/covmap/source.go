package covmap

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
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
	// Since is the earliest recorded_at of the committed rows that make the
	// range a gap: the reference's rows overlapping it, for a sink's gap;
	// the other sinks' rows overlapping it, for a hole of the reference.
	// Nil when no such row exists (a hole between the reference's own
	// ranges that no sink covers). Rows rewritten by compaction carry the
	// rewrite's time, so the gap may be older than Since: never younger.
	Since *time.Time
}

// Committed is the durable tier as of one table snapshot.
type Committed struct {
	Reference string
	// SnapshotID is the table snapshot read; zero for an empty table.
	SnapshotID int64
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
		tasks, err := recovery.Plan(ctx, s.Table, recovery.PlanOptions{Reference: ref, MaxBatches: math.MaxUint64, MaxTasks: -1, Extents: extents, Sinks: s.Sinks})
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
		if !same {
			c.Note = fmt.Sprintf("the table changed during each of %d reads: gaps and covered ranges may be one checkpoint apart", consistentReads)
		}
		timelines, covered, err := scanTimelines(ctx, after)
		if err != nil {
			return Committed{}, err
		}
		c.Covered = covered
		c.Gaps = gapsWithAges(tasks, ref, timelines)
		return c, nil
	}
}

func snapshotID(tbl *table.Table) int64 {
	if s := tbl.CurrentSnapshot(); s != nil {
		return s.SnapshotID
	}
	return 0
}

// segment is a stretch of batches first covered by a row recorded at At.
type segment struct {
	r  coverage.Range
	at time.Time
}

// timeline is one destination's disjoint segments, ordered by start.
type timeline []segment

type row struct {
	r  coverage.Range
	at time.Time
}

// scanTimelines reads every row with its recorded_at and returns per
// destination when each batch was first covered, and the covered sets.
func scanTimelines(ctx context.Context, tbl *table.Table) (map[coverage.Destination]timeline, map[coverage.Destination]*coverage.RangeSet, error) {
	rows := map[coverage.Destination][]row{}
	err := iceberg.ReadRows(ctx, tbl, durable.Filter{}, true, func(r iceberg.Row) error {
		rows[r.Destination] = append(rows[r.Destination], row{r: r.Range, at: r.RecordedAt})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("covmap: %w", err)
	}
	timelines := make(map[coverage.Destination]timeline, len(rows))
	covered := make(map[coverage.Destination]*coverage.RangeSet, len(rows))
	var replaced, fresh []coverage.Range
	for d, rs := range rows {
		slices.SortStableFunc(rs, func(a, b row) int { return a.at.Compare(b.at) })
		set := new(coverage.RangeSet)
		var tl timeline
		for _, r := range rs {
			m, err := set.MergeRange(r.r, replaced)
			if err != nil {
				return nil, nil, fmt.Errorf("covmap: %w: row %s %s: %w", coverage.ErrCorrupt, d, r.r, err)
			}
			replaced = m.Replaced
			fresh = m.Fresh(r.r, fresh[:0])
			for _, f := range fresh {
				tl = append(tl, segment{r: f, at: r.at})
			}
		}
		slices.SortFunc(tl, func(a, b segment) int { return cmp.Compare(a.r.Start, b.r.Start) })
		timelines[d], covered[d] = tl, set
	}
	return timelines, covered, nil
}

// earliest is the earliest time any segment of tl overlapping r was first
// covered.
func (tl timeline) earliest(r coverage.Range) (time.Time, bool) {
	var best time.Time
	found := false
	for i := sort.Search(len(tl), func(i int) bool { return tl[i].r.End > r.Start }); i < len(tl) && tl[i].r.Start < r.End; i++ {
		if !found || tl[i].at.Before(best) {
			best, found = tl[i].at, true
		}
	}
	return best, found
}

// gapsWithAges turns the plan's tasks into gaps dated by the rows that make
// them gaps (see Gap.Since).
func gapsWithAges(tasks []recovery.Task, ref string, timelines map[coverage.Destination]timeline) []Gap {
	others := map[recovery.TopicPartition][]timeline{}
	for d, tl := range timelines {
		if d.Sink != ref {
			tp := recovery.TopicPartition{Topic: d.Topic, Partition: d.Partition}
			others[tp] = append(others[tp], tl)
		}
	}
	gaps := make([]Gap, 0, len(tasks))
	for _, t := range tasks {
		g := Gap{Destination: t.Destination, Range: t.Range}
		var basis []timeline
		if t.Kind == recovery.KindVerifyReference {
			basis = others[recovery.TopicPartition{Topic: t.Destination.Topic, Partition: t.Destination.Partition}]
		} else {
			basis = []timeline{timelines[t.Destination.WithSink(ref)]}
		}
		for _, tl := range basis {
			if at, ok := tl.earliest(t.Range); ok && (g.Since == nil || at.Before(*g.Since)) {
				g.Since = &at
			}
		}
		gaps = append(gaps, g)
	}
	return gaps
}
