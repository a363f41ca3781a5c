package local

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/internal/testseed"
)

// The randomized fault tests draw everything from one seed (internal/testseed:
// -seed N or COVMIRROR_SEED=N replays a failure). Pebble's background
// goroutines make the interleaving of injected faults vary a little
// between runs.
func faultSeed(t *testing.T) uint64 { return testseed.Seed(t) }

// randInjector fails write operations, with ENOSPC or EIO, with a
// probability while armed.
type randInjector struct {
	mu   sync.Mutex
	r    *rand.Rand
	prob float64
	left int // operations still armed
}

func (i *randInjector) String() string { return "random" }

func (i *randInjector) arm(prob float64, ops int) {
	i.mu.Lock()
	i.prob, i.left = prob, ops
	i.mu.Unlock()
}

func (i *randInjector) MaybeError(op errorfs.Op) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.left <= 0 || op.Kind.ReadOrWrite() != errorfs.OpIsWrite {
		return nil
	}
	i.left--
	if i.r.Float64() >= i.prob {
		return nil
	}
	errno := syscall.ENOSPC
	if i.r.IntN(2) == 0 {
		errno = syscall.EIO
	}
	return &fs.PathError{Op: "write", Path: op.Path, Err: errno}
}

// model is what the test knows the store may and must hold.
type model struct {
	attempted map[coverage.Destination]*coverage.RangeSet // every Record called
	recorded  map[coverage.Destination]*coverage.RangeSet // Record returned nil
	marking   map[coverage.Destination]*coverage.RangeSet // every checkpoint CommitCheckpoint was called on
	committed map[coverage.Destination]*coverage.RangeSet // CommitCheckpoint returned nil
}

func newModel() *model {
	return &model{attempted: map[coverage.Destination]*coverage.RangeSet{}, recorded: map[coverage.Destination]*coverage.RangeSet{},
		marking: map[coverage.Destination]*coverage.RangeSet{}, committed: map[coverage.Destination]*coverage.RangeSet{}}
}

func add(m map[coverage.Destination]*coverage.RangeSet, d coverage.Destination, r coverage.Range) {
	if m[d] == nil {
		m[d] = new(coverage.RangeSet)
	}
	_ = m[d].Add(r)
}

func addCheckpoint(m map[coverage.Destination]*coverage.RangeSet, cp *Checkpoint) {
	for _, dr := range cp.Ranges {
		for _, r := range dr.Ranges {
			add(m, dr.Destination, r)
		}
	}
}

func setOf(m map[coverage.Destination]*coverage.RangeSet, d coverage.Destination) *coverage.RangeSet {
	if m[d] == nil {
		return new(coverage.RangeSet)
	}
	return m[d]
}

// within fails the test unless a is within b.
func within(t *testing.T, step int, what string, d coverage.Destination, a, b *coverage.RangeSet) {
	t.Helper()
	if over := coverage.Gaps(a, b); !over.IsEmpty() {
		t.Fatalf("step %d: %s: %s has %v beyond", step, what, d, over.String())
	}
}

// check compares the store's index with the model.
func (m *model) check(t *testing.T, step int, s *Store) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	for d, st := range s.dests {
		within(t, step, "covered within attempted records (never lead)", d, &st.covered, setOf(m.attempted, d))
		within(t, step, "checkpointed within covered", d, &st.checkpointed, &st.covered)
		within(t, step, "checkpointed within checkpoints marked", d, &st.checkpointed, setOf(m.marking, d))
	}
	for d, set := range m.recorded {
		within(t, step, "records that returned nil are covered", d, set, coveredOf(s, d))
	}
	for d, set := range m.committed {
		var cp coverage.RangeSet
		if st := s.dests[d]; st != nil {
			cp = st.checkpointed
		}
		within(t, step, "committed checkpoints are marked", d, set, &cp)
	}
}

func coveredOf(s *Store, d coverage.Destination) *coverage.RangeSet {
	if st := s.dests[d]; st != nil {
		return &st.covered
	}
	return new(coverage.RangeSet)
}

// forget keeps of m only what a crash may not lose: without Sync, records
// and marks survive only as far as the reopened store holds them.
func (m *model) forget(s *Store, syncOn bool) {
	keep := func(set map[coverage.Destination]*coverage.RangeSet, held func(*destState) *coverage.RangeSet) {
		for d, rs := range set {
			have := new(coverage.RangeSet)
			if st := s.dests[d]; st != nil {
				have = held(st)
			}
			lost := coverage.Gaps(rs, have)
			kept := coverage.Gaps(rs, &lost)
			set[d] = &kept
		}
	}
	if !syncOn {
		keep(m.recorded, func(st *destState) *coverage.RangeSet { return &st.covered })
	}
	keep(m.committed, func(st *destState) *coverage.RangeSet { return &st.checkpointed })
}

// TestFaultsNeverLead runs random records and checkpoints while writes
// under the store fail at random (ENOSPC, EIO), closing and reopening it,
// and after a failure restarting on a crash image of the disk. After every
// step: nothing is covered that was never recorded, nothing checkpointed
// beyond covered or beyond the checkpoints marked, and every Record that
// returned nil is covered while the process lives (with Sync, across
// crashes too).
func TestFaultsNeverLead(t *testing.T) {
	seed := faultSeed(t)
	defer func(w time.Duration) { closeWait = w }(closeWait)
	closeWait = time.Second // a Pebble wedged by a failure is left behind, not waited for
	runs := 4
	if testing.Short() {
		runs = 2 // one without Sync, one with
	}
	for i := range runs {
		syncOn := i%2 == 1
		t.Run(fmt.Sprintf("run%d-sync=%v", i, syncOn), func(t *testing.T) {
			runFaults(t, seed+uint64(i), syncOn, 300)
		})
	}
}

func runFaults(t *testing.T, seed uint64, syncOn bool, steps int) {
	r := rand.New(rand.NewPCG(seed, 0))
	inj := &randInjector{r: rand.New(rand.NewPCG(seed, 1))}
	mem := vfs.NewCrashableMem()
	delay := []time.Duration{-1, time.Millisecond, 20 * time.Millisecond}[r.IntN(3)]
	open := func(step int) *Store {
		inj.arm(0, 0)
		s, err := Open(Options{Dir: "/store", FS: errorfs.Wrap(mem, inj), Sync: syncOn, CommitDelay: delay})
		if err != nil {
			t.Fatalf("step %d: reopening after faults: %v", step, err)
		}
		return s
	}
	dests := []coverage.Destination{{Sink: "raw", Topic: "t"}, {Sink: "lake", Topic: "t"}, {Sink: "lake", Topic: "t", Partition: 1}}
	m := newModel()
	s := open(-1)
	var cp *Checkpoint
	restarts, failures := 0, 0
	for step := range steps {
		switch x := r.IntN(100); {
		case x < 60:
			// One Record, or a RecordBatch of up to 8 entries.
			entries := make([]coverage.Entry, 1+r.IntN(8)*r.IntN(2))
			for i := range entries {
				start := uint64(r.IntN(400))
				entries[i] = coverage.Entry{Destination: dests[r.IntN(len(dests))], Range: coverage.Range{Start: start, End: start + 1 + uint64(r.IntN(5))}}
				add(m.attempted, entries[i].Destination, entries[i].Range)
			}
			// RecordBatch's count is held to what Record's nil promises
			// (with Sync: across crashes), error or not.
			n, err := 0, error(nil)
			if len(entries) == 1 {
				if err = s.Record(ctx, entries[0].Destination, entries[0].Range); err == nil {
					n = 1
				}
			} else {
				n, err = s.RecordBatch(ctx, entries)
			}
			if err == nil && n != len(entries) {
				t.Fatalf("step %d: RecordBatch of %d entries returned (%d, nil)", step, len(entries), n)
			}
			for _, e := range entries[:n] {
				add(m.recorded, e.Destination, e.Range)
			}
			if err != nil && s.health.failed() == nil && !errors.Is(err, coverage.ErrUnavailable) {
				t.Fatalf("step %d: record: %v", step, err)
			}
		case x < 70:
			if cp == nil {
				got, err := s.BeginCheckpoint(ctx)
				if err == nil && got != nil {
					cp = got
				}
			}
		case x < 78:
			if cp != nil {
				addCheckpoint(m.marking, cp)
				if err := s.CommitCheckpoint(ctx, cp); err == nil {
					addCheckpoint(m.committed, cp)
					cp = nil
				}
			}
		case x < 84:
			if cp != nil && s.AbortCheckpoint(ctx, cp) == nil {
				cp = nil
			}
		case x < 92:
			inj.arm(r.Float64()*0.5, 1+r.IntN(40))
		default:
			restarts++
			err := s.Close()
			if err != nil {
				// The process restarts on what its disk holds after a crash.
				failures++
				mem = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: r.IntN(101), RNG: rand.New(rand.NewPCG(seed, uint64(step)))})
			}
			s, cp = open(step), nil
			if err != nil {
				s.mu.Lock()
				m.forget(s, syncOn)
				s.mu.Unlock()
			}
		}
		m.check(t, step, s)
	}
	t.Logf("seed %d: %d restarts, %d after a failure", seed, restarts, failures)
	_ = s.Close()
}

// TestPowerLossReopens: crash images of the disk taken while the store
// runs (some unsynced data kept, some not) reopen without ErrCorrupt, hold
// only what was recorded and checkpointed only what was covered, and with
// Sync every Record that returned nil.
func TestPowerLossReopens(t *testing.T) {
	seed := faultSeed(t)
	for _, syncOn := range []bool{false, true} {
		t.Run(fmt.Sprintf("sync=%v", syncOn), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 2))
			mem := vfs.NewCrashableMem()
			opts := Options{Dir: "/store", Sync: syncOn, CommitDelay: time.Millisecond}
			m := newModel()
			d := []coverage.Destination{{Sink: "raw", Topic: "t"}, {Sink: "lake", Topic: "t"}}
			for crash := range 20 {
				opts.FS = mem
				s, err := Open(opts)
				if err != nil {
					t.Fatalf("crash %d: reopening: %v", crash, err)
				}
				s.mu.Lock()
				m.forget(s, syncOn)
				s.mu.Unlock()
				m.check(t, crash, s)
				for range 20 + r.IntN(60) {
					dest := d[r.IntN(len(d))]
					start := uint64(r.IntN(2000))
					rg := coverage.Range{Start: start, End: start + 1 + uint64(r.IntN(3))}
					add(m.attempted, dest, rg)
					if s.Record(ctx, dest, rg) == nil {
						add(m.recorded, dest, rg)
					}
					if r.IntN(15) == 0 {
						if cp, err := s.BeginCheckpoint(ctx); err == nil && cp != nil {
							addCheckpoint(m.marking, cp)
							if r.IntN(3) > 0 && s.CommitCheckpoint(ctx, cp) == nil {
								addCheckpoint(m.committed, cp)
							} else {
								_ = s.AbortCheckpoint(ctx, cp)
							}
						}
					}
				}
				// Power fails now: the running store's disk as it may come back.
				mem = mem.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: r.IntN(101), RNG: rand.New(rand.NewPCG(seed, uint64(crash)))})
				_ = s.Close()
			}
		})
	}
}
