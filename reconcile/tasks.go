package reconcile

import (
	"cmp"
	"maps"
	"slices"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/recovery"
)

// Tasks turns a report's claimed-absent rows into recovery tasks for the
// recovery worker (recovery.Recover), as recovery.Plan would plan them:
//
//   - a row of the reference sink itself (reference; zero value
//     coverage.RawSink) cannot be replayed from the reference: it becomes a
//     recovery.KindVerifyReference task. These come first, so a replay that
//     fails (Recover stops at the first) never keeps the reference's own
//     verification from running;
//   - a row of any other sink becomes a replay (recovery.KindReplay), which
//     dedup absorbs where the sink did hold the batches, clipped to what
//     the reference holds: its committed coverage as Run read it, less its
//     own claimed-absent rows. The rest of the row waits, as in Plan, for the
//     reference's verification to re-record it; a later reconcile then
//     finds it again. A Report not made by Run (one decoded from JSON) has
//     no reference coverage, so its rows become no replays.
//
// Every task is of at most maxBatches batches (zero value:
// recovery.DefaultMaxBatches), cut as recovery cuts its plans. Nothing is
// retracted.
func Tasks(r Report, reference string, maxBatches uint64) []recovery.Task {
	if reference == "" {
		reference = coverage.RawSink
	}
	if maxBatches == 0 {
		maxBatches = recovery.DefaultMaxBatches
	}
	absent := map[coverage.Destination]*coverage.RangeSet{}
	for _, row := range r.Absent {
		d := coverage.Destination{Sink: row.Sink, Topic: row.Topic, Partition: row.Partition}
		if absent[d] == nil {
			absent[d] = new(coverage.RangeSet)
		}
		_ = absent[d].Add(coverage.Range{Start: row.Start, End: row.End}) // Run's rows are valid; a bad one is dropped
	}
	dests := slices.SortedFunc(maps.Keys(absent), func(a, b coverage.Destination) int { return a.Compare(b) })
	var verify, replay []recovery.Task
	for _, d := range dests {
		set := absent[d]
		kind := recovery.KindReplay
		if d.Sink == reference {
			kind = recovery.KindVerifyReference
		} else {
			held := new(coverage.RangeSet) // what the reference can replay from
			if ref := r.committed[d.WithSink(reference)]; ref != nil {
				c := ref.Clone()
				held = &c
			}
			if lost := absent[d.WithSink(reference)]; lost != nil {
				g := coverage.Gaps(held, lost)
				held = &g
			}
			outside := coverage.Gaps(set, held)
			in := coverage.Gaps(set, &outside)
			set = &in
		}
		if set.IsEmpty() {
			continue
		}
		a := recovery.Assignment{Destination: d, Kind: kind, Replay: set.Ranges()}
		ts, _ := a.Tasks(maxBatches, 0) // no task limit: no ErrPlanTruncated
		if kind == recovery.KindVerifyReference {
			verify = append(verify, ts...)
		} else {
			replay = append(replay, ts...)
		}
	}
	out := append(verify, replay...)
	if out == nil {
		out = []recovery.Task{}
	}
	return out
}

// covers reports whether the coverage Run read holds any of sink's.
func (r Report) covers(sink string) bool {
	for d := range r.committed {
		if d.Sink == sink {
			return true
		}
	}
	return false
}

// compareDest orders destinations by topic and partition (one sink's).
func compareDest(a, b coverage.Destination) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
}
