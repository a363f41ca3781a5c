package mirror

import (
	"context"
	"fmt"
	"slices"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/local"
)

// releaseRounds bounds Release's checkpoint-and-release rounds: a record
// that lands after a round's checkpoint began keeps its destination, and
// the next round carries it.
const releaseRounds = 3

// ReleaseSummary is what Release did.
type ReleaseSummary struct {
	// Released are the destinations, of every sink, of the partitions
	// released whose local state was dropped, in destination order.
	Released []coverage.Destination `json:"released"`
	// Retained are those kept because records kept landing in them while
	// the release ran: still pending, they are checkpointed as usual and
	// released by a later Release.
	Retained []coverage.Destination `json:"retained"`
	// Checkpoint is the checkpoints the release ran, summed.
	Checkpoint CheckpointSummary `json:"checkpoint"`
}

// Release drops this pod's local state of partitions it no longer owns,
// of every sink: call it on a partition's revocation, once the pipeline
// stopped writing it. It checkpoints first (Checkpoint), so that what is
// pending commits to the durable tier, and then drops the destinations
// whose every range is in a committed checkpoint (local.Store.Release), so
// the local tier is never the only copy of what it drops. If a checkpoint
// fails, nothing more is dropped and the error says so; what was pending
// stays pending.
//
// A record of a released partition that lands after the release re-creates
// its local state, pending, which the next checkpoint carries: harmless, so
// Release refuses no record. One that races a release lands in time for its
// checkpoint, or keeps its destination for the next round; after
// releaseRounds rounds a destination still recorded into is Retained.
func (m *Mirror) Release(ctx context.Context, parts []coverage.TopicPartition) (ReleaseSummary, error) {
	sum := ReleaseSummary{Released: []coverage.Destination{}, Retained: []coverage.Destination{}}
	if err := local.ValidatePartitions(parts); err != nil {
		return sum, fmt.Errorf("mirror: release: %w; nothing was released", err)
	}
	if len(parts) == 0 {
		return sum, nil
	}
	for range releaseRounds {
		cs, err := m.Checkpoint(ctx)
		sum.Checkpoint.Checkpoints += cs.Checkpoints
		sum.Checkpoint.Batches = coverage.AddSaturating(sum.Checkpoint.Batches, cs.Batches)
		sum.Checkpoint.Destinations += cs.Destinations
		sum.Checkpoint.Positions += cs.Positions
		sum.Checkpoint.Duration += cs.Duration
		if err != nil {
			return m.released(sum), fmt.Errorf("mirror: release of %d partitions: %w; %d destinations released before it, "+
				"the others are kept (nothing uncommitted is dropped): release again once checkpoints succeed",
				len(parts), err, len(sum.Released))
		}
		res, err := m.opts.Local.Release(ctx, parts)
		if err != nil {
			return m.released(sum), fmt.Errorf("mirror: release of %d partitions: %w; %d destinations released before it",
				len(parts), err, len(sum.Released))
		}
		sum.Released = append(sum.Released, res.Released...)
		sum.Retained = append(sum.Retained[:0], res.Retained...)
		if len(res.Retained) == 0 {
			break
		}
	}
	if len(sum.Retained) > 0 {
		m.opts.Logger.Warn("release: destinations still recorded into are kept; they are checkpointed as usual: "+
			"stop writing a partition before releasing it", "retained", len(sum.Retained), "first", sum.Retained[0].String())
	}
	return m.released(sum), nil
}

// released sorts sum.Released and drops repeats: a destination recorded
// into again after one round released it is released again by the next.
func (m *Mirror) released(sum ReleaseSummary) ReleaseSummary {
	slices.SortFunc(sum.Released, coverage.Destination.Compare)
	sum.Released = slices.Compact(sum.Released)
	return sum
}
