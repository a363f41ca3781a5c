package sidecar

import (
	"sync"
	"time"
)

// recordGate stands between a record request and Mirror.RecordBatch, so
// that a 200 means what the final checkpoint carries. Until Shutdown closes
// it, requests enter; Shutdown then waits for those inside before the
// caller's Mirror.Close begins the final checkpoint, so a Record that ended
// by then is in the local tier when the checkpoint begins. A request that
// reaches the gate after it closed, or whose Record ends after Shutdown
// stopped waiting, answers 503: the final checkpoint may not carry it.
type recordGate struct {
	mu      sync.Mutex
	closed  bool // no request enters
	settled bool // Shutdown stopped waiting: a Record ending now is not carried
	inside  int
	idle    chan struct{} // closed when the last request inside leaves, once closed
}

// enter reports whether a request may record.
func (g *recordGate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.inside++
	return true
}

// leave ends a request's Record, and reports whether it ended before
// Shutdown stopped waiting: only then does the final checkpoint carry it.
func (g *recordGate) leave() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.inside--
	if g.inside == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
	return !g.settled
}

// close lets no request in and waits up to wait for those inside; it
// returns how many were still inside, whose requests then answer 503.
func (g *recordGate) close(wait time.Duration) int {
	g.mu.Lock()
	g.closed = true
	var idle chan struct{}
	if g.inside > 0 {
		idle = make(chan struct{})
		g.idle = idle
	}
	g.mu.Unlock()
	if idle != nil {
		timer := time.NewTimer(wait)
		select {
		case <-idle:
		case <-timer.C:
		}
		timer.Stop()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.settled = true
	return g.inside
}

// recordDrainWait bounds how long Shutdown waits for the Records inside
// the gate: a local tier's Record returns in microseconds unless a write it
// must wait for stalls. A variable for the tests.
var recordDrainWait = 5 * time.Second
