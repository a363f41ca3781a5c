package lease_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/lease"
)

// process is one contender's life in a chaos run: it acquires, holds until
// the lease is lost, and acquires again, until its context ends (a crash)
// or its lease is closed.
type process struct {
	l      lease.Lease
	cancel context.CancelFunc
	done   chan struct{}
}

// watch records every holding and fails the test when a contender is told
// it holds the lease while another's holding has not ended: the only
// instants the set of holders grows are acquisitions, so checking there is
// checking at every instant.
type watch struct {
	t     testing.TB
	mu    sync.Mutex
	held  map[int]context.Context
	takes int
	who   []int // holder of each acquisition, in order
}

func newWatch(t testing.TB) *watch { return &watch{t: t, held: map[int]context.Context{}} }

func (w *watch) acquired(id int, held context.Context) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for other, ctx := range w.held {
		if other != id && ctx.Err() == nil {
			w.t.Errorf("contender %d acquired the lease while contender %d still holds it", id, other)
		}
	}
	w.held[id] = held
	w.takes++
	w.who = append(w.who, id)
}

// holder is the contender holding the lease now, if one does.
func (w *watch) holder() (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for id, ctx := range w.held {
		if ctx.Err() == nil {
			return id, true
		}
	}
	return 0, false
}

// holders is how many contenders hold the lease now.
func (w *watch) holders() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, ctx := range w.held {
		if ctx.Err() == nil {
			n++
		}
	}
	return n
}

// start runs contender id over l until its context ends.
func (w *watch) start(id int, l lease.Lease) *process {
	ctx, cancel := context.WithCancel(context.Background())
	p := &process{l: l, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			held, err := l.Acquire(ctx)
			if err != nil {
				return
			}
			w.acquired(id, held)
			<-held.Done()
		}
	}()
	return p
}

// chaos runs n contenders made by newLease through steps random events
// (crash, close, and pause when pause is not nil), each followed by a
// random wait of up to maxWait, and checks one holder at a time
// throughout. It returns the watch for the caller's own checks.
func chaos(t *testing.T, seed uint64, n, steps int, maxWait time.Duration, newLease func(id int) lease.Lease, pause func(id int, d time.Duration)) *watch {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	w := newWatch(t)
	procs := make([]*process, n)
	for i := range procs {
		procs[i] = w.start(i, newLease(i))
	}
	for range steps {
		time.Sleep(time.Duration(rng.Int64N(int64(maxWait))))
		id := rng.IntN(n)
		if h, ok := w.holder(); ok && rng.IntN(2) == 0 {
			id = h // events on the holder are the ones that move the lease
		}
		switch k := rng.IntN(3); {
		case k == 0 || (k == 2 && pause == nil):
			// A crash: the renewals stop, nothing is released, and the
			// process comes back as a new contender.
			procs[id].cancel()
			<-procs[id].done
			procs[id] = w.start(id, newLease(id))
		case k == 1:
			// A shutdown: Close releases, and a new process starts.
			if err := procs[id].l.Close(); err != nil {
				// A paused store: the lease is then taken over after its TTL.
				t.Logf("contender %d: Close: %v", id, err)
			}
			procs[id].cancel()
			<-procs[id].done
			procs[id] = w.start(id, newLease(id))
		default:
			pause(id, time.Duration(rng.Int64N(int64(3*maxWait))))
		}
	}
	for _, p := range procs {
		if err := p.l.Close(); err != nil {
			t.Logf("Close: %v", err)
		}
		p.cancel()
		<-p.done
	}
	if w.holders() != 0 {
		t.Errorf("%d contenders still hold the lease after every one closed", w.holders())
	}
	return w
}
