package mirror

import (
	"fmt"
	"os"
	"testing"

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

func openObjectTier(dir string) (*object.Tier, error) {
	b, err := object.OpenDir(dir)
	if err != nil {
		return nil, err
	}
	return object.Open(ctx, object.Options{Blobs: b, Layout: object.Layout(os.Getenv(childObjectLayout))})
}

// TestEightProcessesCheckpointObjects: eight owners of the same sink
// objects, each an OS process with its own local tier, checkpoint 100
// times each at once into one object directory. Every checkpoint must land
// and the objects must hold exactly the union of the owners' ranges; the
// preconditions lost to each other are reported.
func TestEightProcessesCheckpointObjects(t *testing.T) {
	const owners = 8
	dir := t.TempDir()
	var writes, preconditions int64
	for w, out := range runOwners(t, owners, childObjectDir+"="+dir) {
		c := childCounters(t, fmt.Sprintf("owner %d", w), out, "object-stats", "writes", "preconditions", "unknown")
		writes, preconditions = writes+c["writes"], preconditions+c["preconditions"]
	}
	t.Logf("%d owners x %d checkpoints: %d sink-object writes, %d conditional writes refused (another owner wrote first) and retried",
		owners, checkpointsPerOwner, writes, preconditions)
	tier, err := openObjectTier(dir)
	if err != nil {
		t.Fatal(err)
	}
	requireExactly(t, tier, ownersUnion(owners))
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
	dir := t.TempDir()
	tier, err := openObjectTier(dir)
	if err != nil {
		t.Fatal(err)
	}
	crashInto(t, tier, kills, childObjectDir+"="+dir)
}
