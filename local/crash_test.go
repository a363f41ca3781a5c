package local

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/gapstate"
	"github.com/covmirror/covmirror/internal/childproc"
)

// The crash test re-runs this test binary as a child that records and
// checkpoints in a loop until it is SIGKILLed. Before each step the child
// appends what it is about to do to a log (one write each, so a kill leaves
// whole lines), so the parent knows an upper bound of what the store may
// hold.
const (
	crashDirEnv  = "COVMIRROR_CRASH_DIR"
	crashLogEnv  = "COVMIRROR_CRASH_LOG"
	crashSeedEnv = "COVMIRROR_CRASH_SEED"
	crashSyncEnv = "COVMIRROR_CRASH_SYNC"
)

func TestMain(m *testing.M) {
	childproc.Main(m, map[string]func() error{
		"crash":        func() error { return crashChild(os.Getenv(crashDirEnv), os.Getenv(crashLogEnv)) },
		"begun":        func() error { return begunChild(os.Getenv(crashDirEnv), os.Getenv(crashLogEnv), false) },
		"begun-behind": func() error { return begunChild(os.Getenv(crashDirEnv), os.Getenv(crashLogEnv), true) },
	})
}

var crashDests = []coverage.Destination{
	{Sink: "lake", Topic: "orders", Partition: 0},
	{Sink: "lake", Topic: "orders", Partition: 1},
	{Sink: "search", Topic: "orders", Partition: 0},
}

func crashChild(dir, logPath string) error {
	seed, _ := strconv.ParseUint(os.Getenv(crashSeedEnv), 10, 64)
	r := rand.New(rand.NewPCG(seed, 0))
	s, err := Open(Options{Dir: dir, Sync: os.Getenv(crashSyncEnv) == "1"})
	if err != nil {
		return err
	}
	log, err := os.OpenFile(logPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	say := func(format string, args ...any) error {
		_, err := fmt.Fprintf(log, format+"\n", args...)
		return err
	}
	for n := 0; ; n++ {
		if r.IntN(60) == 0 {
			if err := crashStates(s, r, n, say); err != nil {
				return err
			}
			continue
		}
		if r.IntN(40) != 0 {
			d := r.IntN(len(crashDests))
			start := uint64(r.IntN(5000))
			end := start + 1 + uint64(r.IntN(4))
			if err := say("R %d %d %d", d, start, end); err != nil {
				return err
			}
			if err := s.Record(ctx, crashDests[d], coverage.Range{Start: start, End: end}); err != nil {
				return err
			}
			continue
		}
		cp, err := s.BeginCheckpoint(ctx)
		if err != nil || cp == nil {
			if err != nil {
				return err
			}
			continue
		}
		ranges, _ := json.Marshal(cp.Ranges)
		if err := say("B %s %s", cp.Name(), ranges); err != nil {
			return err
		}
		if r.IntN(4) == 0 {
			if err := say("A %s", cp.Name()); err != nil {
				return err
			}
			if err := s.AbortCheckpoint(ctx, cp); err != nil {
				return err
			}
			continue
		}
		// Here the durable commit would run; the child marks it only after.
		if err := say("M %s", cp.Name()); err != nil {
			return err
		}
		if err := s.CommitCheckpoint(ctx, cp); err != nil {
			return err
		}
	}
}

// crashStates records a gap state, or marks the pending ones shipped,
// saying so before ("S", "P") and after it returned ("s"). The state's
// sink is never recorded as coverage.
func crashStates(s *Store, r *rand.Rand, n int, say func(string, ...any) error) error {
	if r.IntN(3) == 0 {
		pending := s.PendingStates()
		for _, e := range pending {
			if err := say("P %s", e.ID); err != nil {
				return err
			}
		}
		return s.MarkStatesShipped(ctx, pending)
	}
	e := gapstate.Event{ID: fmt.Sprintf("%x-%d", r.Uint64(), n), Destination: coverage.Destination{Sink: "held", Topic: "orders"},
		Range: coverage.Range{Start: uint64(n), End: uint64(n) + 1}, State: gapstate.Refused, Reason: "400", By: "child", At: time.Now()}
	if err := say("S %s", e.ID); err != nil {
		return err
	}
	if err := s.RecordStates(ctx, []gapstate.Event{e}); err != nil {
		return err
	}
	return say("s %s", e.ID)
}

// crashLog is what the children said they were about to do, read
// incrementally as the log grows.
type crashLog struct {
	path      string
	offset    int64
	attempted map[coverage.Destination]*coverage.RangeSet
	begun     map[string][]coverage.DestinationRanges
	marked    map[coverage.Destination]*coverage.RangeSet // ranges of checkpoints the children marked
	// states: "S" attempted, "s" recorded (RecordStates returned), "P"
	// about to be marked shipped.
	states map[string]string
}

func newCrashLog(path string) *crashLog {
	return &crashLog{path: path, attempted: map[coverage.Destination]*coverage.RangeSet{},
		begun: map[string][]coverage.DestinationRanges{}, marked: map[coverage.Destination]*coverage.RangeSet{}, states: map[string]string{}}
}

// update reads the lines appended since the last call. A torn last line
// cannot happen (each is one write), but one without its newline is left
// for the next call all the same.
func (l *crashLog) update(t *testing.T) {
	t.Helper()
	f, err := os.Open(l.path)
	if os.IsNotExist(err) {
		return // killed before it opened its log: it attempted nothing
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(l.offset, 0); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReaderSize(f, 1<<20)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		l.offset += int64(len(line))
		l.apply(t, strings.TrimSuffix(line, "\n"))
	}
}

func (l *crashLog) apply(t *testing.T, line string) {
	add := func(m map[coverage.Destination]*coverage.RangeSet, d coverage.Destination, r coverage.Range) {
		if m[d] == nil {
			m[d] = new(coverage.RangeSet)
		}
		if err := m[d].Add(r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
	}
	f := strings.SplitN(line, " ", 3)
	switch f[0] {
	case "R":
		fields := strings.Fields(line)
		d, _ := strconv.Atoi(fields[1])
		start, _ := strconv.ParseUint(fields[2], 10, 64)
		end, _ := strconv.ParseUint(fields[3], 10, 64)
		add(l.attempted, crashDests[d], coverage.Range{Start: start, End: end})
	case "B":
		var ranges []coverage.DestinationRanges
		if err := json.Unmarshal([]byte(f[2]), &ranges); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		l.begun[f[1]] = ranges
	case "S", "s", "P":
		if f[0] != "S" && l.states[f[1]] == "" {
			t.Fatalf("log line %q: a state never attempted", line)
		}
		if l.states[f[1]] != "P" {
			l.states[f[1]] = f[0]
		}
	case "M":
		ranges, ok := l.begun[f[1]]
		if !ok {
			t.Fatalf("log marks %s, never begun", f[1])
		}
		for _, dr := range ranges {
			for _, r := range dr.Ranges {
				add(l.marked, dr.Destination, r)
			}
		}
	}
}

// TestCrashKilledChildNeverOverClaims kills a recording child 50 times at
// random moments. After every kill the store must open, report as covered
// only ranges the child had started to record, and report as checkpointed
// only ranges of checkpoints the child had started to mark.
func TestCrashKilledChildNeverOverClaims(t *testing.T) {
	r := rng(t)
	dir, logPath := t.TempDir(), t.TempDir()+"/log"
	log := newCrashLog(logPath)
	kills := 50
	if testing.Short() {
		kills = 10
	}
	held := false
	for i := range kills {
		child := childproc.Start(t, "crash", crashDirEnv+"="+dir, crashLogEnv+"="+logPath,
			crashSeedEnv+"="+strconv.FormatUint(r.Uint64(), 10), crashSyncEnv+"="+strconv.Itoa(i%2))
		child.KillAfter(t, time.Duration(30+r.IntN(300))*time.Millisecond, fmt.Sprintf("kill %d", i))
		log.update(t)
		held = checkAfterKill(t, i, dir, log) || held
	}
	// A child slow to start (a loaded machine) may be killed before its
	// first record a few times; over all the kills it must have recorded.
	if !held {
		t.Fatalf("the store was empty after each of %d kills: the children never got to record, so nothing was tested", kills)
	}
	recorded := 0
	for _, said := range log.states {
		if said != "S" {
			recorded++
		}
	}
	if recorded == 0 {
		t.Fatalf("over %d kills the children recorded no gap state, so their keeping was not tested", kills)
	}
	t.Logf("%d gap states recorded over the kills", recorded)
}

func checkAfterKill(t *testing.T, kill int, dir string, l *crashLog) (held bool) {
	t.Helper()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatalf("kill %d: reopening: %v", kill, err)
	}
	defer s.Close()
	for d, st := range s.dests {
		attempted := l.attempted[d]
		if attempted == nil {
			attempted = new(coverage.RangeSet)
		}
		if over := coverage.Gaps(&st.covered, attempted); !over.IsEmpty() {
			t.Fatalf("kill %d: %s covers %v that the child never recorded", kill, d, over.String())
		}
		marked := l.marked[d]
		if marked == nil {
			marked = new(coverage.RangeSet)
		}
		if over := coverage.Gaps(&st.checkpointed, marked); !over.IsEmpty() {
			t.Fatalf("kill %d: %s has %v checkpointed that the child never marked", kill, d, over.String())
		}
		if over := coverage.Gaps(&st.checkpointed, &st.covered); !over.IsEmpty() {
			t.Fatalf("kill %d: %s has %v checkpointed but not covered", kill, d, over.String())
		}
	}
	// A state recorded survives the kill (RecordStates syncs); none was
	// made up, none is shipped that the child did not mark, and none is
	// coverage.
	for id, said := range l.states {
		if st := s.states[id]; st == nil && said != "S" {
			t.Fatalf("kill %d: gap state %q was recorded (RecordStates returned) and is gone", kill, id)
		}
	}
	for id, st := range s.states {
		if said := l.states[id]; said == "" || st.Shipped && said != "P" {
			t.Fatalf("kill %d: gap state %q (shipped %v) that the child said %q of", kill, id, st.Shipped, said)
		}
	}
	for d := range s.dests {
		if d.Sink == "held" {
			t.Fatalf("kill %d: the gap states' sink %s has coverage", kill, d)
		}
	}
	return len(s.dests) > 0
}
