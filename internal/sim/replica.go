package sim

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/demo"
	"github.com/covmirror/covmirror/replica"
)

// replicate is the mirror job: the coverage table made a copy of the
// primary (the object or PostgreSQL tier), both through the faults.
func (w *world) replicate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, err := replica.Replicate(ctx, w.table, w.ice, replica.Options{Writer: "sim-replicator", Logger: w.cfg.Logger})
	w.note("replicate: %d sinks, %d replaced, %d unchanged, %d raced: %v", res.Sinks, res.Replaced, res.Unchanged, res.Raced, errText(err))
	return nil
}

// readReplica is the replica's coverage, read without faults; nil when
// the run is on the iceberg tier.
func (w *world) readReplica(ctx context.Context) (map[coverage.Destination]*coverage.RangeSet, error) {
	if !w.replica {
		return nil, nil
	}
	got, err := w.iceTruth.Coverage(ctx, durable.Filter{})
	if err != nil {
		return nil, fmt.Errorf("reading the replica table without faults: %w", err)
	}
	return got, nil
}

// checkReplica fails if the replica, read before committed (the
// primary's coverage), claims a range the primary lacks: the table may
// lag its primary, never lead it.
func checkReplica(replica, committed map[coverage.Destination]*coverage.RangeSet) error {
	for _, d := range slices.SortedFunc(func(yield func(coverage.Destination) bool) {
		for d := range replica {
			if !yield(d) {
				return
			}
		}
	}, coverage.Destination.Compare) {
		primary := committed[d]
		if primary == nil {
			primary = new(coverage.RangeSet)
		}
		if extra := coverage.Gaps(replica[d], primary); !extra.IsEmpty() {
			return fmt.Errorf("%w: the replica table claims %s of %s, which the primary lacks (it has %s)",
				demo.ErrLeads, extra.String(), d, primary)
		}
	}
	return nil
}

// finalReplica, with faults off and the primary quiescent, replicates
// once more: the table must then hold exactly what the primary holds.
func (w *world) finalReplica(ctx context.Context) error {
	if !w.replica {
		return nil
	}
	res, err := replica.Replicate(ctx, w.table, w.ice, replica.Options{Writer: "sim-replicator", Logger: w.cfg.Logger})
	w.note("final replicate: %d sinks, %d replaced, %d unchanged, %d raced: %v", res.Sinks, res.Replaced, res.Unchanged, res.Raced, errText(err))
	if err != nil {
		return fmt.Errorf("replicate with faults off: %w", err)
	}
	replica, err := w.readReplica(ctx)
	if err != nil {
		return err
	}
	committed, err := w.truth.Coverage(ctx, durable.Filter{})
	if err != nil {
		return fmt.Errorf("reading the primary (%s) without faults: %w", w.cfg.Durable, err)
	}
	if err := checkReplica(replica, committed); err != nil {
		return err
	}
	for d, set := range committed {
		have := replica[d]
		if have == nil {
			have = new(coverage.RangeSet)
		}
		if missing := coverage.Gaps(set, have); !missing.IsEmpty() {
			return fmt.Errorf("after a replication with faults off the replica table lacks %s of %s (it has %s, the primary %s)",
				missing.String(), d, have, set)
		}
	}
	return nil
}
