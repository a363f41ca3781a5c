package lease_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/lease"
	"github.com/covmirror/covmirror/object"
)

const ttl = 30 * time.Second

// gate is Blobs whose calls a test can hold up: a paused process, or a
// network that delays its answers. after holds the answer back once the
// call was made (a write of unknown outcome) rather than the call.
type gate struct {
	object.Blobs
	mu    sync.Mutex
	until time.Time
	after bool
}

func (g *gate) pause(d time.Duration, after bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.until, g.after = time.Now().Add(d), after
}

func (g *gate) wait(ctx context.Context, after bool) error {
	g.mu.Lock()
	d, match := time.Until(g.until), g.after == after
	g.mu.Unlock()
	if d <= 0 || !match {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (g *gate) Get(ctx context.Context, key string) ([]byte, string, error) {
	if err := g.wait(ctx, false); err != nil {
		return nil, "", err
	}
	data, v, err := g.Blobs.Get(ctx, key)
	if werr := g.wait(ctx, true); werr != nil {
		return nil, "", werr
	}
	return data, v, err
}

func (g *gate) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	if err := g.wait(ctx, false); err != nil {
		return "", err
	}
	v, err := g.Blobs.Put(ctx, key, data, ifMatch)
	if werr := g.wait(ctx, true); werr != nil {
		return "", werr // the write may have landed: outcome unknown
	}
	return v, err
}

func openDir(t *testing.T, dir string) *object.DirBlobs {
	t.Helper()
	b, err := object.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func newObject(t *testing.T, b object.Blobs, holder string) lease.Lease {
	t.Helper()
	l, err := lease.NewObject(b, lease.Options{Role: "fleet", Holder: holder, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestObjectOneHolder: among five contenders on one lease directory that
// crash, close and pause (their store calls held up before or after they
// land) at random, no contender is ever told it holds the lease while
// another's holding lasts, and the lease keeps changing hands.
func TestObjectOneHolder(t *testing.T) {
	seed := testseed.Seed(t)
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		blobs := openDir(t, dir)
		gates := make([]*gate, 5)
		for i := range gates {
			gates[i] = &gate{Blobs: blobs}
		}
		var flip bool
		w := chaos(t, seed, len(gates), 1000, ttl, func(id int) lease.Lease {
			gates[id].pause(0, false)
			return newObject(t, gates[id], "pod")
		}, func(id int, d time.Duration) {
			flip = !flip
			gates[id].pause(d, flip)
		})
		if w.takes < 100 {
			t.Errorf("the lease was taken %d times in 1000 crashes, closes and pauses; want many more", w.takes)
		}
	})
}

// TestObjectTakeoverAfterTTL: a holder that stops renewing (a crash) keeps
// the lease from a contender for a TTL after its last renewal, and no
// longer than a TTL and two attempts; Close hands it over at the
// contender's next attempt.
func TestObjectTakeoverAfterTTL(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		blobs := openDir(t, dir)
		a, b := newObject(t, blobs, "a"), newObject(t, blobs, "b")
		actx, crash := context.WithCancel(context.Background())
		heldA, err := a.Acquire(actx)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan context.Context, 1)
		bctx, stopB := context.WithCancel(context.Background())
		defer stopB()
		go func() {
			held, err := b.Acquire(bctx)
			if err != nil {
				t.Error(err)
			}
			got <- held
		}()
		time.Sleep(5 * ttl) // a renews throughout
		synctest.Wait()
		if len(got) != 0 || heldA.Err() != nil {
			t.Fatalf("the holder lost the lease while renewing it: %v", context.Cause(heldA))
		}
		crash()
		crashed := time.Now()
		heldB := <-got
		waited := time.Since(crashed)
		every := ttl / 3
		if waited < ttl-every || waited > ttl+2*every {
			t.Errorf("the lease was taken over %s after the holder crashed; want its TTL %s after its last renewal (at most %s before the crash), within two attempts", waited, ttl, every)
		}
		if !errors.Is(context.Cause(heldA), context.Canceled) {
			t.Errorf("the crashed holder's context ended with %v, want its parent's cause", context.Cause(heldA))
		}
		// Close releases: a waits no TTL.
		a2 := newObject(t, blobs, "a")
		got2 := make(chan time.Time, 1)
		go func() {
			if _, err := a2.Acquire(context.Background()); err != nil {
				t.Error(err)
			}
			got2 <- time.Now()
		}()
		time.Sleep(ttl)
		closed := time.Now()
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(context.Cause(heldB), lease.ErrClosed) {
			t.Errorf("the closed holder's context ended with %v, want ErrClosed", context.Cause(heldB))
		}
		if waited := (<-got2).Sub(closed); waited > every {
			t.Errorf("a released lease was taken %s after Close; want at the next attempt, within %s", waited, every)
		}
		_ = a2.Close()
	})
}

// TestObjectRefusesBadOptions: a bad role, an empty holder, a deadline not
// below the TTL are refused with an error.
func TestObjectRefusesBadOptions(t *testing.T) {
	blobs := openDir(t, t.TempDir())
	for _, o := range []lease.Options{
		{Role: "", Holder: "a"},
		{Role: "../x", Holder: "a"},
		{Role: "fleet"},
		{Role: "fleet", Holder: "a", TTL: time.Second, RenewDeadline: 2 * time.Second},
		{Role: "fleet", Holder: "a", TTL: time.Second, RenewEvery: time.Second / 2, RenewDeadline: time.Second / 3},
	} {
		if _, err := lease.NewObject(blobs, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

// TestObjectLateAnswerIsNoHolding: a take whose answer comes back after
// a TTL (the write landed, the reply was held up) is not reported as a
// holding: a contender that waited out the write since has the lease.
func TestObjectLateAnswerIsNoHolding(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		blobs := openDir(t, dir)
		a, b := newObject(t, &latePut{Blobs: blobs, d: 3 * ttl}, "a"), newObject(t, blobs, "b")
		gotA := make(chan context.Context, 1)
		go func() {
			held, err := a.Acquire(context.Background())
			if err == nil {
				gotA <- held
			}
		}()
		synctest.Wait() // a's write landed; its answer is held up
		heldB, err := b.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * ttl)
		synctest.Wait()
		if len(gotA) != 0 {
			t.Errorf("a was told it holds the lease from a write answered after %s, while b holds it", 3*ttl)
		}
		if heldB.Err() != nil {
			t.Fatalf("b lost the lease: %v", context.Cause(heldB))
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		if heldA := <-gotA; heldA.Err() != nil {
			t.Errorf("a took the released lease but its holding ended: %v", context.Cause(heldA))
		}
		_ = a.Close()
	})
}

// latePut answers its first Put d after the write landed.
type latePut struct {
	object.Blobs
	d    time.Duration
	once sync.Once
}

func (l *latePut) Put(ctx context.Context, key string, data []byte, ifMatch string) (string, error) {
	v, err := l.Blobs.Put(ctx, key, data, ifMatch)
	l.once.Do(func() { time.Sleep(l.d) })
	return v, err
}
