package local

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/covmirror/covmirror/coverage"
)

// TestCheckpointNameNeverReusedAfterPowerLoss: with Sync off, power losses
// (keeping only synced data, or some of the rest) between the steps of
// checkpoints never make the store hand out one name with two different
// sets of ranges: the durable tier binds a name to its payload, and a
// lookup by name of a resumed checkpoint must find that checkpoint only.
// A resumed checkpoint carries exactly the ranges it was handed out with,
// and they are covered.
func TestCheckpointNameNeverReusedAfterPowerLoss(t *testing.T) {
	seed := faultSeed(t)
	r := rand.New(rand.NewPCG(seed, 7))
	mem := vfs.NewCrashableMem()
	open := func() *Store {
		s, err := Open(Options{Dir: "/store", FS: mem, CommitDelay: -1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	handed := map[string]string{} // name -> ranges
	crashes, resumed := 0, 0
	s := open()
	var cp *Checkpoint
	next := uint64(0)
	for step := range 300 {
		switch x := r.IntN(10); {
		case x < 4:
			record(t, s, d, next, next+1)
			next += 1 + uint64(r.IntN(2)) // gaps keep the ranges apart
		case x < 6 && cp == nil:
			got, err := s.BeginCheckpoint(ctx)
			if err != nil {
				t.Fatalf("step %d: begin: %v", step, err)
			}
			if got == nil {
				continue
			}
			ranges := fmt.Sprint(got.Ranges)
			if prev, ok := handed[got.Name()]; ok && prev != ranges {
				t.Fatalf("step %d: checkpoint %s handed out with %s, and before with %s", step, got.Name(), ranges, prev)
			}
			if ok := handed[got.Name()] != ""; ok != got.Resumed {
				t.Fatalf("step %d: %s handed out again, resumed=%v", step, got.Name(), got.Resumed)
			}
			if got.Resumed {
				resumed++
			}
			handed[got.Name()] = ranges
			covered, _ := s.Covered(ctx, d)
			for _, dr := range got.Ranges {
				for _, rg := range dr.Ranges {
					if !covered.ContainsRange(rg) {
						t.Fatalf("step %d: checkpoint %s carries %s, not covered (%s)", step, got.Name(), rg, covered.String())
					}
				}
			}
			cp = got
		case x < 8 && cp != nil:
			// The durable commit would land here; marking may be lost.
			if err := s.CommitCheckpoint(ctx, cp); err != nil {
				t.Fatalf("step %d: commit: %v", step, err)
			}
			cp = nil
		case x < 9 && cp != nil:
			if err := s.AbortCheckpoint(ctx, cp); err != nil {
				t.Fatalf("step %d: abort: %v", step, err)
			}
			cp = nil
		case x == 9 && r.IntN(3) == 0:
			// Power fails: only synced data survives, or some of the rest.
			cfg := vfs.CrashCloneCfg{}
			if r.IntN(2) == 0 {
				cfg = vfs.CrashCloneCfg{UnsyncedDataPercent: r.IntN(101), RNG: rand.New(rand.NewPCG(seed, uint64(step)))}
			}
			crashed := mem.CrashClone(cfg)
			_ = s.Close()
			mem, cp = crashed, nil
			crashes++
			s = open()
		}
	}
	_ = s.Close()
	if len(handed) < 10 || crashes < 3 || resumed == 0 {
		t.Fatalf("%d checkpoints handed out, %d crashes, %d resumed: the test exercised too little", len(handed), crashes, resumed)
	}
}
