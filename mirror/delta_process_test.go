package mirror

import (
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/childproc"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/object"
)

// foldForever is the "fold" child: it folds the object tier in its
// environment until it is killed.
func foldForever() error {
	tier, err := openObjectTier(os.Getenv(childObjectDir))
	if err != nil {
		return err
	}
	for {
		if _, err := tier.Fold(ctx); err != nil {
			return err
		}
	}
}

func openDeltaTier(t *testing.T, dir string) *object.Tier {
	t.Helper()
	b, err := object.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	tier, err := object.Open(ctx, object.Options{Blobs: b, Layout: object.LayoutDeltas})
	if err != nil {
		t.Fatal(err)
	}
	return tier
}

// TestEightProcessesCheckpointDeltas: eight owners checkpoint 100 times
// each into the deltas layout of one directory while a folder in this
// process folds on; after a last fold no delta is left and the bases hold
// exactly the union.
func TestEightProcessesCheckpointDeltas(t *testing.T) {
	const owners = 8
	dir := t.TempDir()
	folder := openDeltaTier(t, dir)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	folds := 0
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := folder.Fold(ctx); err != nil {
				t.Errorf("fold: %v", err)
				return
			}
			folds++
		}
	})
	var writes int64
	for w, out := range runOwners(t, owners, childObjectDir+"="+dir, childObjectLayout+"="+string(object.LayoutDeltas)) {
		writes += childCounters(t, fmt.Sprintf("owner %d", w), out, "object-stats", "writes", "preconditions", "unknown")["writes"]
	}
	close(stop)
	wg.Wait()
	if _, err := folder.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d owners x %d checkpoints: %d deltas written, %d folds meanwhile", owners, checkpointsPerOwner, writes, folds)
	requireExactly(t, folder, ownersUnion(owners))
}

// TestCrashDuringDeltaCheckpoints is TestCrashDuringObjectCheckpoints on
// the deltas layout.
func TestCrashDuringDeltaCheckpoints(t *testing.T) {
	kills := 30
	if testing.Short() {
		kills = 5
	}
	dir := t.TempDir()
	crashInto(t, openDeltaTier(t, dir), kills, childObjectDir+"="+dir, childObjectLayout+"="+string(object.LayoutDeltas))
}

// TestCrashDuringFold kills a folding process at random moments, with
// deltas and sink objects to fold: after every kill the tier reads exactly
// what was appended (nothing lost, nothing claimed), and a last fold
// leaves no delta.
func TestCrashDuringFold(t *testing.T) {
	kills := 20
	if testing.Short() {
		kills = 5
	}
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 0))
	dir := t.TempDir()
	tier := openDeltaTier(t, dir)
	legacy := openObjectTierT(t, dir)
	want := map[coverage.Destination]*coverage.RangeSet{}
	for kill := range kills {
		for i := range 20 {
			c := durable.Checkpoint{Writer: fmt.Sprintf("pod-%d", r.IntN(4)), Name: fmt.Sprintf("k%d-%d", kill, i)}
			for range 1 + r.IntN(5) {
				d := coverage.Destination{Sink: []string{"raw", "lake"}[r.IntN(2)], Topic: "orders", Partition: int32(r.IntN(200))}
				start := uint64(r.IntN(10_000))
				c.Ranges = append(c.Ranges, coverage.DestinationRanges{Destination: d, Ranges: []coverage.Range{{Start: start, End: start + 1 + uint64(r.IntN(9))}}})
			}
			to := tier
			if r.IntN(4) == 0 {
				to = legacy // a process still on the sinks layout
			}
			if err := to.Append(ctx, c); err != nil {
				t.Fatal(err)
			}
			for _, dr := range c.Ranges {
				if want[dr.Destination] == nil {
					want[dr.Destination] = new(coverage.RangeSet)
				}
				_ = want[dr.Destination].Add(dr.Ranges[0])
			}
		}
		child := childproc.Start(t, "fold", childObjectDir+"="+dir, childObjectLayout+"="+string(object.LayoutDeltas))
		child.KillAfter(t, time.Duration(20+r.IntN(300))*time.Millisecond, fmt.Sprintf("kill %d", kill))
		requireExactly(t, tier, want)
	}
	if _, err := tier.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	requireExactly(t, tier, want)
}

func openObjectTierT(t *testing.T, dir string) *object.Tier {
	t.Helper()
	b, err := object.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	tier, err := object.Open(ctx, object.Options{Blobs: b})
	if err != nil {
		t.Fatal(err)
	}
	return tier
}
