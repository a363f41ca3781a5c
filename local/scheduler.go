package local

import (
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// compactionGate is the pebble.CompactionScheduler of one pebble.Open: it
// grants no compaction until the store has opened, and none once the
// instance is closed or its Open failed.
//
// Pebble's Open flushes the WAL it replays, and that flush may start a
// compaction on Pebble's own goroutine. If Open then fails (creating the new
// WAL, the OPTIONS file or the directory's sync fails), its cleanup closes
// the file cache and the object provider without waiting for that
// compaction, which then dies on the closed file cache (an integer divide
// by zero) or on the closed cleanup queue, killing the process (pebble
// v2.1.7, open.go). Pebble's default scheduler would also keep granting
// compactions to that failed instance from a goroutine of its own for ever:
// only Close unregisters it, and a failed Open has nothing to close. With
// this gate a failed Open leaves no compaction behind, and the compaction
// picked meanwhile waits in Pebble until start grants it.
//
// Once started it grants what Pebble allows without permission
// (GetAllowedWithoutPermission: its CompactionConcurrencyRange, one at a
// time by default), like pebble's ConcurrencyLimitScheduler, without a
// goroutine of its own: a finished compaction grants the next, and so does
// a flush that raises the allowance. Locking follows Pebble's interface:
// TrySchedule and UpdateGetAllowedWithoutPermission run under DB.mu and do
// not call back into the DB (GetAllowedWithoutPermission takes no lock);
// GetWaitingCompaction and Schedule are called with no lock of ours held.
type compactionGate struct {
	mu       sync.Mutex
	granted  *sync.Cond // broadcast when granting turns false
	db       pebble.DBForCompaction
	state    gateState
	running  int  // compactions granted and not Done
	granting bool // one goroutine at a time asks the DB to run compactions
}

type gateState uint8

const (
	gateOpening gateState = iota // Pebble may be opening: grant nothing
	gateRunning                  // the store opened: grant up to the allowance
	gateStopped                  // closed, or its Open failed: grant nothing, for good
)

var (
	_ pebble.CompactionScheduler   = (*compactionGate)(nil)
	_ pebble.CompactionGrantHandle = (*compactionGate)(nil)
)

func newCompactionGate() *compactionGate {
	g := &compactionGate{}
	g.granted = sync.NewCond(&g.mu)
	return g
}

// Register implements pebble.CompactionScheduler.
func (g *compactionGate) Register(_ int, db pebble.DBForCompaction) {
	g.mu.Lock()
	g.db = db
	g.mu.Unlock()
}

// Unregister implements pebble.CompactionScheduler: DB.Close calls it, with
// no DB lock held, before it waits for the compactions in progress. It
// grants nothing more and waits for a grant in progress to finish.
func (g *compactionGate) Unregister() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.state = gateStopped
	for g.granting {
		g.granted.Wait()
	}
}

// stop grants nothing more, for good, without waiting: a failed Open calls
// it, where a grant in progress may wait for ever on a Pebble goroutine
// parked in the failure (health.go). Its Pebble instance, if any, is then
// closed (Unregister) or left to the process's exit.
func (g *compactionGate) stop() {
	g.mu.Lock()
	g.state = gateStopped
	g.mu.Unlock()
}

// start lets compactions run, and runs the one Pebble picked while it
// opened. The caller holds no Pebble lock.
func (g *compactionGate) start() {
	g.mu.Lock()
	if g.state != gateOpening || g.db == nil {
		g.mu.Unlock()
		return
	}
	g.state = gateRunning
	g.grantLockedAndUnlock()
}

// TrySchedule implements pebble.CompactionScheduler. DB.mu is held.
func (g *compactionGate) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != gateRunning || g.db.GetAllowedWithoutPermission() <= g.running {
		return false, nil // Pebble keeps the compaction waiting; start or Done grants it
	}
	g.running++
	return true, g
}

// UpdateGetAllowedWithoutPermission implements pebble.CompactionScheduler.
// DB.mu is held, so a grant runs on a goroutine of its own.
func (g *compactionGate) UpdateGetAllowedWithoutPermission() {
	g.mu.Lock()
	more := g.state == gateRunning && !g.granting && g.db.GetAllowedWithoutPermission() > g.running
	g.mu.Unlock()
	if more {
		go func() {
			g.mu.Lock()
			g.grantLockedAndUnlock()
		}()
	}
}

// grantLockedAndUnlock asks the DB to run waiting compactions up to the
// allowance. Called with g.mu held; returns with it released.
func (g *compactionGate) grantLockedAndUnlock() {
	defer g.mu.Unlock()
	for g.granting && g.state == gateRunning {
		g.granted.Wait()
	}
	if g.state != gateRunning {
		return
	}
	toGrant := g.db.GetAllowedWithoutPermission() - g.running
	if toGrant <= 0 {
		return
	}
	g.granting = true
	g.mu.Unlock()
	for ; toGrant > 0; toGrant-- {
		if waiting, _ := g.db.GetWaitingCompaction(); !waiting {
			break
		}
		// Counted before Schedule: the compaction may be Done before it returns.
		g.mu.Lock()
		g.running++
		g.mu.Unlock()
		if !g.db.Schedule(g) {
			g.mu.Lock()
			g.running--
			g.mu.Unlock()
			break
		}
	}
	g.mu.Lock()
	g.granting = false
	g.granted.Broadcast()
}

// Started implements pebble.CompactionGrantHandle.
func (g *compactionGate) Started() {}

// MeasureCPU implements pebble.CompactionGrantHandle.
func (g *compactionGate) MeasureCPU(pebble.CompactionGoroutineKind) {}

// CumulativeStats implements pebble.CompactionGrantHandle.
func (g *compactionGate) CumulativeStats(pebble.CompactionGrantHandleStats) {}

// Done implements pebble.CompactionGrantHandle: a compaction finished, with
// no DB lock held, so the next waiting one may run.
func (g *compactionGate) Done() {
	g.mu.Lock()
	g.running--
	g.grantLockedAndUnlock()
}
