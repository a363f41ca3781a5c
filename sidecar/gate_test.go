package sidecar

import (
	"testing"
	"time"
)

// TestRecordGate: a Record that ends before Shutdown stops waiting is
// carried (200); one still inside then is not (503), nor may any request
// enter after the gate closed.
func TestRecordGate(t *testing.T) {
	var g recordGate
	if !g.enter() || !g.leave() {
		t.Fatal("an open gate refused a request, or did not carry its Record")
	}
	if !g.enter() {
		t.Fatal("an open gate refused a request")
	}
	left := make(chan bool)
	go func() {
		// Inside when the gate closes; ends while it waits: carried.
		for {
			g.mu.Lock()
			waiting := g.closed
			g.mu.Unlock()
			if waiting {
				break
			}
			time.Sleep(time.Millisecond)
		}
		left <- g.leave()
	}()
	if n := g.close(time.Hour); n != 0 {
		t.Fatalf("close returned with %d inside; want it to wait for the Record", n)
	}
	if !<-left {
		t.Fatal("a Record that ended while Shutdown waited was not carried")
	}
	if g.enter() {
		t.Fatal("a closed gate let a request in")
	}

	var h recordGate
	h.enter()
	if n := h.close(time.Millisecond); n != 1 {
		t.Fatalf("close after its wait: %d inside, want 1", n)
	}
	if h.leave() {
		t.Fatal("a Record that ended after Shutdown stopped waiting was carried")
	}
}
