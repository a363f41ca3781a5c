package mirror

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/childproc"
	"github.com/covmirror/covmirror/local"
	"github.com/covmirror/covmirror/object"
)

// withChildObjectMirror runs role on a Mirror into the object tier on dir,
// and prints the Store's counters for the parent.
func withChildObjectMirror(dir string, role func(*Mirror) error) error {
	tier, err := openObjectTier(dir)
	if err != nil {
		return err
	}
	if err := runChildMirror(tier, role); err != nil {
		return err
	}
	st := tier.Stats()
	fmt.Printf("object-stats writes=%d preconditions=%d unknown=%d\n", st.Writes, st.Preconditions, st.Unknown)
	return nil
}

func openObjectTier(dir string) (*object.Store, error) {
	b, err := object.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	return object.Open(ctx, object.Options{Blobs: b})
}

// TestEightProcessesCheckpointObjects: eight owners of the same sink
// objects, each an OS process with its own local tier, checkpoint 100
// times each at once into one object directory. Every checkpoint must land
// and the objects must hold exactly the union of the owners' ranges; the
// preconditions lost to each other are reported.
func TestEightProcessesCheckpointObjects(t *testing.T) {
	const owners = 8
	dir := t.TempDir()
	var children []*childproc.Child
	for w := range owners {
		children = append(children, childproc.Start(t, "concurrent", childObjectDir+"="+dir,
			childLocal+"="+t.TempDir(), childWriter+"=owner-"+strconv.Itoa(w)))
	}
	writes, preconditions := 0, 0
	for w, c := range children {
		c.Wait(t, fmt.Sprintf("owner %d", w))
		var wr, pre, unknown int
		i := strings.Index(c.Output(), "object-stats ")
		if i < 0 {
			t.Fatalf("owner %d printed no counters: %s", w, c.Output())
		}
		if _, err := fmt.Sscanf(c.Output()[i:], "object-stats writes=%d preconditions=%d unknown=%d", &wr, &pre, &unknown); err != nil {
			t.Fatalf("owner %d: %v in %q", w, err, c.Output())
		}
		writes, preconditions = writes+wr, preconditions+pre
	}
	t.Logf("%d owners x %d checkpoints: %d sink-object writes, %d conditional writes refused (another owner wrote first) and retried",
		owners, checkpointsPerOwner, writes, preconditions)
	want := map[coverage.Destination]*coverage.RangeSet{}
	for w := range owners {
		for i := range checkpointsPerOwner {
			for _, dr := range ownerRanges(w, i) {
				if want[dr.Destination] == nil {
					want[dr.Destination] = new(coverage.RangeSet)
				}
				for _, r := range dr.Ranges {
					_ = want[dr.Destination].Add(r)
				}
			}
		}
	}
	tier, err := openObjectTier(dir)
	if err != nil {
		t.Fatal(err)
	}
	requireExactly(t, tier, want)
}

// requireExactly fails t unless tier covers exactly want.
func requireExactly(t *testing.T, tier durable.Tier, want map[coverage.Destination]*coverage.RangeSet) {
	t.Helper()
	got, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%s has %d destinations, want %d", tier.Name(), len(got), len(want))
	}
	for d, set := range want {
		if got[d] == nil || !got[d].Equal(set) {
			t.Fatalf("%s: %s holds %v, want the union %v", d, tier.Name(), got[d], set.String())
		}
	}
}

// TestCrashDuringObjectCheckpoints kills a process checkpointing into the
// object tier 30 times at random moments (before, during and after sink
// objects are written). After every kill the objects must be readable and
// hold only ranges the child had recorded, and the next checkpoint from the
// same local tier must bring them up to it.
func TestCrashDuringObjectCheckpoints(t *testing.T) {
	kills := 30
	if testing.Short() {
		kills = 5
	}
	dir, localDir, logPath := t.TempDir(), t.TempDir(), t.TempDir()+"/log"
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	attempted := map[int32]*coverage.RangeSet{0: new(coverage.RangeSet), 1: new(coverage.RangeSet)}
	var logOffset int64
	tier, err := openObjectTier(dir)
	if err != nil {
		t.Fatal(err)
	}
	for kill := range kills {
		child := childproc.Start(t, "crash", childObjectDir+"="+dir, childLocal+"="+localDir,
			childWriter+"=crasher", childLog+"="+logPath, childSeed+"="+strconv.FormatUint(r.Uint64(), 10))
		child.KillAfter(t, time.Duration(200+r.IntN(800))*time.Millisecond, fmt.Sprintf("kill %d", kill))
		logOffset = readAttempted(t, logPath, logOffset, attempted)
		checkAfterKill(t, kill, tier, attempted, func() *Mirror {
			l, err := local.Open(local.Options{Dir: localDir})
			if err != nil {
				t.Fatalf("kill %d: reopening the local tier: %v", kill, err)
			}
			m, err := New(Options{Local: l, Durable: tier, Writer: "crasher"})
			if err != nil {
				t.Fatal(err)
			}
			return m
		})
	}
}
