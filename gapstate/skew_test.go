package gapstate

import (
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// A reopen stamped before the refusal it was meant to override (the
// reopener's clock behind the refuser's) does not override it: the latest
// decision by At holds. The refused batches stay gaps, counted and listed
// as refused (findable, to be reopened again), never coverage; coverage
// still wins over the refusal.
func TestReopenStampedBeforeTheRefusal(t *testing.T) {
	d := coverage.Destination{Sink: "lake", Topic: "orders", Partition: 0}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	refusal := Event{ID: "a", Destination: d, Range: coverage.Range{Start: 5, End: 10}, State: Refused, Reason: "400", By: "pod", At: t0}
	reopen := Event{ID: "b", Destination: d, Range: coverage.Range{Start: 0, End: 20}, State: Reopened, Reason: "fixed", By: "op", At: t0.Add(-time.Second)}
	covered, _ := coverage.NewRangeSet(coverage.Range{Start: 5, End: 7})
	spans := Resolve(d, "raw", []Event{reopen, refusal}, &covered)
	if len(spans) != 1 || spans[0].Range != (coverage.Range{Start: 7, End: 10}) || spans[0].Event.ID != "a" {
		t.Fatalf("spans %+v; want the refusal over [7,10): coverage wins, the earlier-stamped reopen does not", spans)
	}
	gaps, _ := coverage.NewRangeSet(coverage.Range{Start: 0, End: 5}, coverage.Range{Start: 7, End: 20})
	var total uint64
	held := 0
	for _, p := range Classify(&gaps, spans) {
		total += p.Range.End - p.Range.Start
		if p.State != "" {
			held++
		}
	}
	if total != 18 || held != 1 {
		t.Errorf("classified %d batches, %d held pieces; want all 18 gap batches, one piece held", total, held)
	}
}
