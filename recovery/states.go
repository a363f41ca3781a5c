package recovery

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/gapstate"
)

// The kinds of a gap a replay cannot close (package gapstate): Plan makes
// no task of them, CommittedGaps lists them, each with its decision.
const (
	// KindRefused: the sink refused these batches permanently. Out of the
	// replay plan until reopened or covered.
	KindRefused TaskKind = TaskKind(gapstate.Refused)
	// KindUnrecoverable: raw no longer holds these batches. Restore raw
	// and reopen, or waive.
	KindUnrecoverable TaskKind = TaskKind(gapstate.Unrecoverable)
	// KindWaived: an operator accepted the loss. Listed by CommittedGaps
	// only with GapsFilter.All.
	KindWaived TaskKind = TaskKind(gapstate.Waived)
)

// Decision is the recorded decision that put a gap in its kind: who, when,
// why, and the event's ID (gapstate.Event).
type Decision struct {
	Event  string    `json:"event"`
	Reason string    `json:"reason"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
}

// Held reports whether k is a kind a replay cannot close.
func (k TaskKind) Held() bool {
	return k == KindRefused || k == KindUnrecoverable || k == KindWaived
}

// readStates reads the gap states of what read selects, by partition, from a
// tier that keeps them; nil from one that does not.
func readStates(ctx context.Context, t durable.Tier, read durable.Filter) (map[TopicPartition][]gapstate.Event, error) {
	s, ok := t.(durable.StateStore)
	if !ok {
		return nil, nil
	}
	read.Sink = "" // a sink's states need the reference's too
	events, err := s.States(ctx, read)
	if err != nil {
		return nil, fmt.Errorf("recovery: plan: the gap states: %w", err)
	}
	return byPartition(events), nil
}

func byPartition(events []gapstate.Event) map[TopicPartition][]gapstate.Event {
	if len(events) == 0 {
		return nil
	}
	out := map[TopicPartition][]gapstate.Event{}
	for _, e := range events {
		tp := e.Destination.TopicPartition()
		out[tp] = append(out[tp], e)
	}
	return out
}

// hold splits target's gaps by its states: the batches of no state stay in
// the returned set, to replay; the others are appended to in.held, each
// piece with its kind and decision.
func (in *planInput) hold(target coverage.Destination, reference string, covered, gaps *coverage.RangeSet) coverage.RangeSet {
	events := in.states[target.TopicPartition()]
	if len(events) == 0 || gaps.IsEmpty() {
		return *gaps
	}
	spans := gapstate.Resolve(target, reference, events, covered)
	if len(spans) == 0 {
		return *gaps
	}
	var replay coverage.RangeSet
	for _, p := range gapstate.Classify(gaps, spans) {
		if p.State == "" {
			_ = replay.Add(p.Range) // pieces of valid gaps are valid
			continue
		}
		in.held = append(in.held, Gap{
			Sink: target.Sink, Topic: target.Topic, Partition: target.Partition,
			Start: p.Range.Start, End: p.Range.End, Kind: TaskKind(p.State),
			Decision: &Decision{Event: p.Event.ID, Reason: p.Event.Reason, By: p.Event.By, At: p.Event.At},
		})
	}
	return replay
}

// String is the decision as text, its free text quoted; "no decision
// recorded" for nil.
func (d *Decision) String() string {
	if d == nil {
		return "no decision recorded"
	}
	return fmt.Sprintf("reason %q by %q at %s (event %q)", d.Reason, d.By, d.At.UTC().Format(time.RFC3339Nano), d.Event)
}

// CountKind counts the gaps of kind k.
func CountKind(gaps []Gap, k TaskKind) int {
	n := 0
	for _, g := range gaps {
		if g.Kind == k {
			n++
		}
	}
	return n
}

// WriteHeld writes, for a plan's reader, the unrecoverable gaps held out of
// it (an operator restores raw and reopens, or waives), one a line with its
// decision, and counts the refused and waived ones (covmirror gaps lists
// them). Nothing for none.
func WriteHeld(w io.Writer, held []Gap) {
	if n := CountKind(held, KindUnrecoverable); n > 0 {
		fmt.Fprintf(w, "unrecoverable, held out of the plan (raw no longer holds them: restore raw and reopen, or waive):\n")
		for _, r := range held {
			if r.Kind == KindUnrecoverable {
				d := coverage.Destination{Sink: r.Sink, Topic: r.Topic, Partition: r.Partition}
				fmt.Fprintf(w, "  %s [%d,%d) %d batches: %s\n", d, r.Start, r.End, r.End-r.Start, r.Decision)
			}
		}
	}
	refused, waived := CountKind(held, KindRefused), CountKind(held, KindWaived)
	if refused+waived > 0 {
		fmt.Fprintf(w, "also held out of the plan: %d refused gaps (covmirror gaps lists them), %d waived (covmirror gaps --all)\n", refused, waived)
	}
}
