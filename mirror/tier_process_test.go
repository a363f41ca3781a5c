package mirror

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/childproc"
	"github.com/covmirror/covmirror/internal/testseed"
	"github.com/covmirror/covmirror/local"
)

// What the process tests of every durable tier share: a child's settings
// for its tier travel as KEY=value environment entries (tierEnv), so one
// body drives the table, the sink objects and the PostgreSQL rows.

// runOwners runs owners "concurrent" children into the tier tierEnv names,
// each with its own local tier, and waits for all of them; it returns
// their outputs.
func runOwners(t *testing.T, owners int, tierEnv ...string) []string {
	t.Helper()
	var children []*childproc.Child
	for w := range owners {
		env := append([]string{childLocal + "=" + t.TempDir(), childWriter + "=owner-" + strconv.Itoa(w)}, tierEnv...)
		children = append(children, childproc.Start(t, "concurrent", env...))
	}
	var outs []string
	for w, c := range children {
		c.Wait(t, fmt.Sprintf("owner %d", w))
		outs = append(outs, c.Output())
	}
	return outs
}

// childCounters parses the line "prefix key=n key=n ..." a child printed,
// failing t when it is missing or any of keys is absent.
func childCounters(t *testing.T, who, output, prefix string, keys ...string) map[string]int64 {
	t.Helper()
	i := strings.Index(output, prefix+" ")
	if i < 0 {
		t.Fatalf("%s printed no %q counters: %s", who, prefix, output)
	}
	line, _, _ := strings.Cut(output[i+len(prefix)+1:], "\n")
	got := map[string]int64{}
	for _, kv := range strings.Fields(line) {
		k, v, ok := strings.Cut(kv, "=")
		n, err := strconv.ParseInt(v, 10, 64)
		if !ok || err != nil {
			t.Fatalf("%s: counter %q in %q", who, kv, line)
		}
		got[k] = n
	}
	for _, k := range keys {
		if _, ok := got[k]; !ok {
			t.Fatalf("%s: no counter %q in %q", who, k, line)
		}
	}
	return got
}

// ownersUnion is the union of what owners concurrent owners record.
func ownersUnion(owners int) map[coverage.Destination]*coverage.RangeSet {
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
	return want
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

var seedFlag = flag.Uint64("seed", 0, "seed for the randomized crash tests (0: from the clock)")

// crashInto kills a "crash" child checkpointing into tier (its settings in
// tierEnv) kills times at random moments, and checks tier after each kill
// (checkAfterKill) with a Mirror restarted on the child's local tier.
func crashInto(t *testing.T, tier durable.Tier, kills int, tierEnv ...string) {
	t.Helper()
	localDir, logPath := t.TempDir(), t.TempDir()+"/log"
	seed := testseed.Seed(t, *seedFlag, "go test ./mirror -run "+t.Name()+" -seed SEED")
	r := rand.New(rand.NewPCG(seed, 0))
	attempted := map[int32]*coverage.RangeSet{0: new(coverage.RangeSet), 1: new(coverage.RangeSet)}
	var logOffset int64
	for kill := range kills {
		env := append([]string{childLocal + "=" + localDir, childWriter + "=crasher", childLog + "=" + logPath,
			childSeed + "=" + strconv.FormatUint(r.Uint64(), 10)}, tierEnv...)
		child := childproc.Start(t, "crash", env...)
		child.KillAfter(t, time.Duration(200+r.IntN(800))*time.Millisecond, fmt.Sprintf("kill %d", kill))
		logOffset = readAttempted(t, logPath, logOffset, attempted)
		checkAfterKill(t, kill, tier, attempted, func() *Mirror { return restartOn(t, tier, localDir, "crasher") })
	}
	var covered uint64
	for _, set := range attempted {
		covered += set.Batches()
	}
	t.Logf("%d kills; the child recorded %d batch ids in all", kills, covered)
}

// restartOn is the Mirror a restarted pod opens: its local tier in dir,
// tier as the durable one.
func restartOn(t testing.TB, tier durable.Tier, dir, writer string) *Mirror {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	l, err := local.Open(local.Options{Dir: dir})
	if err != nil {
		t.Fatalf("opening the local tier %s: %v", dir, err)
	}
	m, err := New(Options{Local: l, Durable: tier, Writer: writer, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
