package local

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/covmirror/covmirror/coverage"
)

// TestNoWriteBehindStartsWhileAWriteWaits: while a write (a checkpoint,
// a flush, Close) waits for the write-behind commit, Records that find
// CommitDelay passed stage their keys and leave them to the waiter; had
// each started a commit of its own, the waiter could wait behind them for
// as long as Records came.
func TestNoWriteBehindStartsWhileAWriteWaits(t *testing.T) {
	s := openTemp(t, Options{Dir: "/store", FS: vfs.NewMem(), CommitDelay: time.Nanosecond})
	defer s.Close()
	s.mu.Lock()
	s.w.waiters++ // a write waiting, as waitWriteBehindLocked counts it
	s.mu.Unlock()
	d := coverage.Destination{Sink: "raw", Topic: "t"}
	for i := range uint64(50) {
		if err := s.Record(ctx, d, coverage.Range{Start: 2 * i, End: 2*i + 1}); err != nil {
			t.Fatal(err)
		}
	}
	s.mu.Lock()
	inFlight, staged := s.w.inFlight != nil, len(s.w.ops)
	s.w.waiters--
	s.mu.Unlock()
	if inFlight || staged == 0 {
		t.Fatalf("with a write waiting, Records started a write-behind commit (in flight %v, %d keys staged)", inFlight, staged)
	}
	// The waiter ended without writing them: the timer does.
	cp, err := s.BeginCheckpoint(ctx)
	if err != nil || cp == nil {
		t.Fatalf("begin: %v, %v", cp, err)
	}
	if err := s.CommitCheckpoint(ctx, cp); err != nil {
		t.Fatal(err)
	}
}

// TestCheckpointsGoOnUnderSteadyRecords runs checkpoints while six
// goroutines record without pause with a CommitDelay of a nanosecond (every
// Record due to start a write-behind commit): each checkpoint returns, and
// carries everything recorded before it began. The limit on each wait is
// only a hang detector.
func TestCheckpointsGoOnUnderSteadyRecords(t *testing.T) {
	s := openTemp(t, Options{Dir: "/store", FS: vfs.NewMem(), CommitDelay: time.Nanosecond})
	defer s.Close()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	recorded := map[coverage.Destination]uint64{} // the end of what each recorder has recorded
	for g := range 6 {
		wg.Go(func() {
			d := coverage.Destination{Sink: "raw", Topic: "t", Partition: int32(g)}
			for i := uint64(0); !stop.Load(); i += 2 { // holes: every record is its own range
				if err := s.Record(ctx, d, coverage.Range{Start: i, End: i + 1}); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				recorded[d] = i + 1
				mu.Unlock()
			}
		})
	}
	defer wg.Wait()
	defer stop.Store(true)
	var worst time.Duration
	committed := map[coverage.Destination]*coverage.RangeSet{}
	for round := range 20 {
		mu.Lock()
		before := map[coverage.Destination]uint64{}
		for d, end := range recorded {
			before[d] = end
		}
		mu.Unlock()
		began := time.Now()
		done := make(chan struct{})
		var cp *Checkpoint
		var err error
		go func() { cp, err = s.BeginCheckpoint(ctx); close(done) }()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatalf("round %d: BeginCheckpoint has not returned in a minute while Records went on", round)
		}
		worst = max(worst, time.Since(began))
		if err != nil {
			t.Fatal(err)
		}
		if cp == nil {
			continue
		}
		if err := s.CommitCheckpoint(ctx, cp); err != nil {
			t.Fatal(err)
		}
		for _, dr := range cp.Ranges {
			set := committed[dr.Destination]
			if set == nil {
				set = new(coverage.RangeSet)
				committed[dr.Destination] = set
			}
			for _, r := range dr.Ranges {
				_ = set.Add(r)
			}
		}
		for d, end := range before {
			if set := committed[d]; end > 0 && (set == nil || !set.Contains(end-1)) {
				t.Fatalf("round %d: %s batch %d was recorded before the checkpoint began and no checkpoint carried it", round, d, end-1)
			}
		}
	}
	t.Logf("longest BeginCheckpoint: %s", worst)
}

// TestSecondCloseWaitsForTheFirst: a Close waiting for a held write-behind
// commit releases the store's lock; a second Close meanwhile returns only
// once the first has ended, so its nil means the store is closed and its
// directory free.
func TestSecondCloseWaitsForTheFirst(t *testing.T) {
	mem := vfs.NewMem()
	fs := newWALStallFS(mem)
	s := openTemp(t, Options{Dir: "/store", FS: fs, CommitDelay: time.Nanosecond, MaxUncommitted: 256})
	var next uint64
	var recorded coverage.RangeSet
	recordUntilStalled(t, s, fs, &next, &recorded)
	first, second := make(chan error, 1), make(chan error, 1)
	go func() { first <- s.Close() }()
	s.mu.Lock()
	for s.w.waiters == 0 { // the first Close waits for the held commit
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		s.mu.Lock()
	}
	s.mu.Unlock()
	go func() { second <- s.Close() }()
	select {
	case err := <-second:
		t.Fatalf("the second Close returned %v while the first waited for a held write", err)
	case <-time.After(100 * time.Millisecond):
	}
	fs.armed.Store(false)
	close(fs.release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	reopened, err := Open(Options{Dir: "/store", FS: mem})
	if err != nil {
		t.Fatalf("reopening after both Closes: %v", err)
	}
	_ = reopened.Close()
}
