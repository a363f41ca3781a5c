package gapstate

import (
	"slices"

	"github.com/covmirror/covmirror/coverage"
)

// Span is a stretch of one destination's batches in one state, and the
// decision that put them there.
type Span struct {
	Range coverage.Range
	// Event is the deciding event; its State is Refused, Unrecoverable or
	// Waived (a reopened stretch is no span).
	Event Event
}

// Resolve returns d's spans: the events about d, and those of raw's
// destination of the same topic and partition (reference names raw's sink)
// except its refusals, decided latest first (Event.Later), each batch in the
// state of the latest decision about it, less every batch covered holds.
// Spans come ordered by start, never overlapping; adjacent batches of one
// decision form one span. events may hold other destinations' events and
// duplicates (one per ID counts: First's). covered may be nil: no coverage.
func Resolve(d coverage.Destination, reference string, events []Event, covered *coverage.RangeSet) []Span {
	ref := coverage.Destination{Sink: reference, Topic: d.Topic, Partition: d.Partition}
	// One copy per ID, First's, chosen among all of them before d's are
	// picked, as the canned SQL does: the answer depends on the set, not
	// on its order.
	first := make(map[string]*Event, len(events))
	for i := range events {
		e := &events[i]
		if k, ok := first[e.ID]; !ok || First(e, k) {
			first[e.ID] = e
		}
	}
	var mine []*Event
	for _, e := range first {
		if e.Destination == d || (e.Destination == ref && e.State != Refused) {
			mine = append(mine, e)
		}
	}
	slices.SortFunc(mine, func(a, b *Event) int {
		if a.Later(b) {
			return 1
		}
		if b.Later(a) {
			return -1
		}
		return 0
	})
	var spans []Span
	for _, e := range mine {
		spans = paint(spans, e)
	}
	return subtract(spans, covered)
}

// paint lays e over spans: e's range leaves every span, then, unless e is
// a reopen, becomes a span of its own.
func paint(spans []Span, e *Event) []Span {
	r := e.Range
	out := spans[:0:0]
	for _, s := range spans {
		if s.Range.End <= r.Start || s.Range.Start >= r.End {
			out = append(out, s)
			continue
		}
		if s.Range.Start < r.Start {
			out = append(out, Span{Range: coverage.Range{Start: s.Range.Start, End: r.Start}, Event: s.Event})
		}
		if s.Range.End > r.End {
			out = append(out, Span{Range: coverage.Range{Start: r.End, End: s.Range.End}, Event: s.Event})
		}
	}
	if e.State != Reopened {
		out = append(out, Span{Range: r, Event: *e})
	}
	slices.SortFunc(out, func(a, b Span) int { return cmpUint(a.Range.Start, b.Range.Start) })
	return out
}

// subtract removes covered's batches from every span: coverage wins.
func subtract(spans []Span, covered *coverage.RangeSet) []Span {
	if covered == nil || covered.IsEmpty() {
		return spans
	}
	var out []Span
	for _, s := range spans {
		one, _ := coverage.NewRangeSet(s.Range) // spans hold valid ranges
		left := coverage.Gaps(&one, covered)
		for r := range left.All() {
			out = append(out, Span{Range: r, Event: s.Event})
		}
	}
	return out
}

func cmpUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Piece is a stretch of a gap and its state: "" for a plain gap, to be
// replayed; otherwise the state of Event, the decision about it.
type Piece struct {
	Range coverage.Range
	State State
	Event *Event
}

// Classify cuts the gaps into pieces by spans (as Resolve returns them, for
// the same destination): each batch of gaps lands in exactly one piece, in
// order, so no state ever makes a gap smaller.
func Classify(gaps *coverage.RangeSet, spans []Span) []Piece {
	var out []Piece
	i := 0
	for g := range gaps.All() {
		cursor := g.Start
		for i < len(spans) && spans[i].Range.End <= cursor {
			i++
		}
		for j := i; j < len(spans) && spans[j].Range.Start < g.End; j++ {
			s := &spans[j]
			if s.Range.Start > cursor {
				out = append(out, Piece{Range: coverage.Range{Start: cursor, End: s.Range.Start}})
				cursor = s.Range.Start
			}
			end := min(s.Range.End, g.End)
			if end > cursor {
				out = append(out, Piece{Range: coverage.Range{Start: cursor, End: end}, State: s.Event.State, Event: &s.Event})
				cursor = end
			}
		}
		if cursor < g.End {
			out = append(out, Piece{Range: coverage.Range{Start: cursor, End: g.End}})
		}
	}
	return out
}
