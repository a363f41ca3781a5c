package gapstate

import (
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
)

// TestSameCopy: one copy is the same decision by the same writer at the
// same microsecond; a tier's nanoseconds lost on the way do not make
// another copy, any other field does.
func TestSameCopy(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)
	a := Event{ID: "e", Destination: coverage.Destination{Sink: "lake", Topic: "t", Partition: 1},
		Range: coverage.Range{Start: 1, End: 2}, State: Refused, Reason: "400", By: "pod-a", At: at}
	b := a
	b.At = at.Truncate(time.Microsecond).In(time.FixedZone("x", 3600))
	if !SameCopy(&a, &b) {
		t.Errorf("a copy read back to the microsecond in another zone is not the same copy")
	}
	for name, edit := range map[string]func(e *Event){
		"by":     func(e *Event) { e.By = "pod-b" },
		"at":     func(e *Event) { e.At = at.Add(time.Microsecond) },
		"reason": func(e *Event) { e.Reason = "401" },
		"state":  func(e *Event) { e.State = Waived },
		"range":  func(e *Event) { e.Range.End = 3 },
	} {
		c := a
		edit(&c)
		if SameCopy(&a, &c) {
			t.Errorf("another %s is the same copy", name)
		}
	}
}
