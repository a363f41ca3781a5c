package mirror

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/local"
)

// gatedTier is a real tier whose appends each wait for a verdict: nil
// lets the append through to the tier, an error fails it without writing.
type gatedTier struct {
	durable.Tier
	entered chan durable.Checkpoint
	verdict chan error
}

func (g *gatedTier) Append(ctx context.Context, c durable.Checkpoint) error {
	g.entered <- c
	select {
	case err := <-g.verdict:
		if err != nil {
			return err
		}
		return g.Tier.Append(ctx, c)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func gatedMirror(t *testing.T) (*Mirror, *gatedTier, *env) {
	t.Helper()
	e := newEnv(t)
	g := &gatedTier{Tier: e.table, entered: make(chan durable.Checkpoint, 16), verdict: make(chan error, 16)}
	l, err := local.Open(local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Local: l, Durable: g, Writer: "pod"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 16 {
			select {
			case g.verdict <- nil:
			default:
			}
		}
		_ = m.Close()
	})
	return m, g, e
}

type result struct {
	sum CheckpointSummary
	err error
}

func checkpointAsync(ctx context.Context, m *Mirror) chan result {
	ch := make(chan result, 1)
	go func() {
		sum, err := m.Checkpoint(ctx)
		ch <- result{sum, err}
	}()
	return ch
}

var shared = coverage.Destination{Sink: "lake", Topic: "orders"}

// A call made while a checkpoint runs, with records made after that
// checkpoint began, is not answered by it: when the checkpoint that does
// carry them fails, the call fails, though the earlier one succeeded.
func TestCallAfterACheckpointBeganIsNotServedByIt(t *testing.T) {
	m, g, e := gatedMirror(t)
	record(t, m, shared, 0, 10)
	first := checkpointAsync(ctx, m)
	<-g.entered // the first checkpoint began, carrying [0, 10)
	record(t, m, shared, 10, 20)
	second := checkpointAsync(ctx, m)
	g.verdict <- nil // the first lands
	if r := <-first; r.err != nil || r.sum.Joined {
		t.Fatalf("first: %+v", r)
	}
	c := <-g.entered // the second's own checkpoint
	if len(c.Ranges) != 1 || c.Ranges[0].Ranges[0] != rg(10, 20) {
		t.Fatalf("second checkpoint carries %v, want [10, 20)", c.Ranges)
	}
	g.verdict <- errors.New("injected: the tier refused")
	if r := <-second; r.err == nil {
		t.Fatalf("second call succeeded (%+v) though the only checkpoint carrying its records failed", r.sum)
	}
	if got := committed(t, e, shared); len(got) != 1 || got[0] != rg(0, 10) {
		t.Fatalf("table holds %v, want [0, 10)", got)
	}
}

// Calls that wait while a checkpoint runs, when the next one fails, are
// not told success: each gets that failure or one of its own.
func TestCallsWaitingOnAFailingCheckpointFail(t *testing.T) {
	m, g, e := gatedMirror(t)
	record(t, m, shared, 0, 10)
	first := checkpointAsync(ctx, m)
	<-g.entered
	record(t, m, shared, 10, 20)
	waiting := []chan result{checkpointAsync(ctx, m), checkpointAsync(ctx, m), checkpointAsync(ctx, m)}
	g.verdict <- errors.New("injected: the first fails")
	if r := <-first; r.err == nil {
		t.Fatalf("first: %+v", r)
	}
	// Every checkpoint from now on fails too, until all waiters answered.
	go func() {
		for range g.entered {
			g.verdict <- errors.New("injected: the tier refused")
		}
	}()
	for i, w := range waiting {
		if r := <-w; r.err == nil {
			t.Errorf("waiter %d: success %+v, though no checkpoint landed", i, r.sum)
		}
	}
	if got := committed(t, e, shared); len(got) != 0 {
		t.Errorf("table holds %v, want nothing", got)
	}
}

// A call waiting for the running checkpoint returns once its context
// ends, with the context's error, rather than when the checkpoint ends
// (which, on a table contended by many pods, is up to CommitTimeout and
// more): an HTTP client gone or a shutdown's deadline frees its caller.
// It is not a failed checkpoint: the stats count none.
func TestWaitingCallReturnsWhenItsContextEnds(t *testing.T) {
	m, g, e := gatedMirror(t)
	record(t, m, shared, 0, 10)
	first := checkpointAsync(ctx, m)
	<-g.entered
	record(t, m, shared, 10, 20)
	wctx, cancel := context.WithCancel(ctx)
	waiter := checkpointAsync(wctx, m)
	cancel()
	select {
	case r := <-waiter:
		if !errors.Is(r.err, context.Canceled) {
			t.Errorf("waiter: %+v, want context.Canceled", r)
		}
	case <-time.After(10 * time.Second):
		t.Errorf("a waiting call whose context ended did not return while the running checkpoint ran")
	}
	if s := m.Stats(); s.Failures != 0 {
		t.Errorf("stats count %d failures: a call that never ran a checkpoint failed none", s.Failures)
	}
	g.verdict <- nil
	if r := <-first; r.err != nil {
		t.Fatal(r.err)
	}
	// The records stay pending, for the next checkpoint.
	next := checkpointAsync(ctx, m)
	<-g.entered
	g.verdict <- nil
	if r := <-next; r.err != nil || r.sum.Joined {
		t.Fatalf("next: %+v", r)
	}
	if got := committed(t, e, shared); len(got) != 1 || got[0] != rg(0, 20) {
		t.Fatalf("table holds %v, want [0, 20)", got)
	}
}

// Close arriving while a checkpoint runs, with a call joined behind it:
// the final checkpoint carries everything recorded before Close, and the
// joined call is answered by a checkpoint that began after it.
func TestCloseWhileACallWaits(t *testing.T) {
	m, g, e := gatedMirror(t)
	record(t, m, shared, 0, 10)
	first := checkpointAsync(ctx, m)
	<-g.entered
	record(t, m, shared, 10, 20)
	waiter := checkpointAsync(ctx, m)
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	go func() {
		for range g.entered {
			g.verdict <- nil
		}
	}()
	g.verdict <- nil
	if r := <-first; r.err != nil {
		t.Fatal(r.err)
	}
	r := <-waiter
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	if got := committed(t, e, shared); len(got) != 1 || got[0] != rg(0, 20) {
		t.Fatalf("after close the table holds %v, want [0, 20) (waiter %+v)", got, r)
	}
	if r.err != nil && !errors.Is(r.err, coverage.ErrClosed) {
		t.Errorf("waiter: %v", r.err)
	}
}
