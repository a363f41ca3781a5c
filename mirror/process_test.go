package mirror

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
	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/childproc"
	"github.com/covmirror/covmirror/local"
)

// Child processes (childproc roles) read their settings from these.
const (
	childProps          = "COVMIRROR_CHILD_PROPS" // catalog properties, JSON
	childLocal          = "COVMIRROR_CHILD_LOCAL" // local tier directory
	childWriter         = "COVMIRROR_CHILD_WRITER"
	childLog            = "COVMIRROR_CHILD_LOG"
	childSeed           = "COVMIRROR_CHILD_SEED"
	childNS             = "COVMIRROR_CHILD_NAMESPACE"
	childNoExpiry       = "COVMIRROR_CHILD_NO_EXPIRY"
	childObjectDir      = "COVMIRROR_CHILD_OBJECT_DIR"    // set: the object tier on this directory, not the table
	childObjectLayout   = "COVMIRROR_CHILD_OBJECT_LAYOUT" // the object tier's layout; zero: sink objects
	childPGSchema       = "COVMIRROR_CHILD_PG_SCHEMA"     // set: the PostgreSQL tier in this schema, not the table
	checkpointsPerOwner = 100
)

func TestMain(m *testing.M) {
	childproc.Main(m, map[string]func() error{
		"concurrent": func() error { return withChildMirror(concurrentOwner) },
		"crash":      func() error { return withChildMirror(crashingOwner) },
		"persistent": func() error { return withChildMirror(persistentOwner) },
		"fold":       foldForever,
	})
}

// withChildMirror opens the Mirror a child's environment describes and runs
// role on it.
func withChildMirror(role func(*Mirror) error) error {
	if dir := os.Getenv(childObjectDir); dir != "" {
		return withChildObjectMirror(dir, role)
	}
	if schema := os.Getenv(childPGSchema); schema != "" {
		return withChildPostgresMirror(schema, role)
	}
	var props map[string]string
	if err := json.Unmarshal([]byte(os.Getenv(childProps)), &props); err != nil {
		return err
	}
	// Opening retries, as a pod's supervisor would: a server killed by the
	// parent while a slow child still opens must not end the child.
	var tbl *iceberg.Table
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		cat, err := iceberg.OpenCatalog(ctx, "", props)
		if err == nil {
			tbl, err = iceberg.Open(ctx, cat, iceberg.Options{Namespace: []string{os.Getenv(childNS)}, CommitTimeout: 5 * time.Minute})
		}
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return err
		}
	}
	return runChildMirror(tbl, role)
}

// runChildMirror opens the child's local tier and runs role on a Mirror
// into tier.
func runChildMirror(tier durable.Tier, role func(*Mirror) error) error {
	l, err := local.Open(local.Options{Dir: os.Getenv(childLocal)})
	if err != nil {
		return err
	}
	opts := Options{Local: l, Durable: tier, Writer: os.Getenv(childWriter)}
	if os.Getenv(childNoExpiry) != "" {
		opts.ExpireEvery = -1 // every snapshot stays for the parent to count
	}
	m, err := New(opts)
	if err != nil {
		return err
	}
	return role(m)
}

// ownerRanges are what concurrent owner w records in round i: overlapping
// the other owner's, with a hole per round that neither fills.
func ownerRanges(w, i int) []coverage.DestinationRanges {
	var out []coverage.DestinationRanges
	for p := range int32(3) {
		start := uint64(i*10 + w*3)
		out = append(out, coverage.DestinationRanges{
			Destination: coverage.Destination{Sink: "lake", Topic: "orders", Partition: p},
			Ranges:      []coverage.Range{{Start: start, End: start + 5}},
		})
	}
	return out
}

// recordRound records owner w's ranges of round i.
func recordRound(m *Mirror, w, i int) error {
	for _, dr := range ownerRanges(w, i) {
		for _, r := range dr.Ranges {
			if err := m.Record(ctx, dr.Destination, r); err != nil {
				return err
			}
		}
	}
	return nil
}

func concurrentOwner(m *Mirror) error {
	w, _ := strconv.Atoi(strings.TrimPrefix(os.Getenv(childWriter), "owner-"))
	for i := range checkpointsPerOwner {
		if err := recordRound(m, w, i); err != nil {
			return err
		}
		if err := m.Sync(ctx); err != nil {
			return fmt.Errorf("checkpoint %d: %w", i, err)
		}
	}
	return m.Close()
}

// persistentOwner is concurrentOwner as a pod's checkpoint loop runs it: a
// failed checkpoint (the catalog down) is retried after a pause while
// recording goes on, and the owner ends once its final checkpoint lands.
func persistentOwner(m *Mirror) error {
	w, _ := strconv.Atoi(strings.TrimPrefix(os.Getenv(childWriter), "owner-"))
	failures, longest := 0, time.Duration(0)
	for i := range checkpointsPerOwner {
		time.Sleep(20 * time.Millisecond) // paced, so that the outage falls mid-stream
		if err := recordRound(m, w, i); err != nil {
			return err
		}
		start := time.Now()
		if err := m.Sync(ctx); err != nil {
			failures++
			time.Sleep(100 * time.Millisecond)
		}
		longest = max(longest, time.Since(start))
	}
	for m.Stats().PendingBatches > 0 || m.Stats().ConsecutiveFailures > 0 {
		if err := m.Sync(ctx); err != nil {
			if failures++; failures > 600 {
				return fmt.Errorf("still failing after %d checkpoints: %w", failures, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	fmt.Printf("%d failed checkpoints, longest %s, done at %d\n", failures, longest.Round(time.Millisecond), time.Now().UnixNano())
	return m.Close()
}

// TestTwoProcessesCheckpointConcurrently: two owners of the same
// destinations, in two OS processes with their own local tiers, checkpoint
// 100 times each into one table at the same time. Every checkpoint must
// land and the table must hold the union of both owners' ranges.
func TestTwoProcessesCheckpointConcurrently(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: about a minute under -race (TestEightProcessesCheckpointObjects and ...Postgres check the union of concurrent owners in make test); make test-slow runs it")
	}
	twoProcesses(t, newEnv(t))
}

func twoProcesses(t *testing.T, e *env) {
	propsJSON, _ := json.Marshal(e.props)
	runOwners(t, 2, childProps+"="+string(propsJSON), childNS+"="+e.namespace)
	requireOwnersUnion(t, e)
	tbl, _ := e.table.Load(ctx)
	perWriter := map[string]int{}
	for _, snap := range tbl.Metadata().Snapshots() {
		perWriter[snap.Summary.Properties[iceberg.SummaryWriter]]++
	}
	if perWriter["owner-0"] != checkpointsPerOwner || perWriter["owner-1"] != checkpointsPerOwner {
		t.Fatalf("snapshots per writer %v, want %d each", perWriter, checkpointsPerOwner)
	}
}

// requireOwnersUnion fails t unless the table covers exactly the union of
// both concurrent owners' ranges.
func requireOwnersUnion(t *testing.T, e *env) {
	t.Helper()
	requireExactly(t, e.table, ownersUnion(2))
}

// crashingOwner records random ranges and checkpoints often, logging each
// range before recording it, until it is killed.
func crashingOwner(m *Mirror) error {
	seed, _ := strconv.ParseUint(os.Getenv(childSeed), 10, 64)
	r := rand.New(rand.NewPCG(seed, 0))
	log, err := os.OpenFile(os.Getenv(childLog), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	for i := 0; ; i++ {
		p := int32(r.IntN(2))
		start := uint64(r.IntN(3000))
		end := start + 1 + uint64(r.IntN(5))
		if _, err := fmt.Fprintf(log, "%d %d %d\n", p, start, end); err != nil {
			return err
		}
		if err := m.Record(ctx, coverage.Destination{Sink: "lake", Topic: "orders", Partition: p}, coverage.Range{Start: start, End: end}); err != nil {
			return err
		}
		if i%5 == 4 {
			if err := m.Sync(ctx); err != nil {
				return err
			}
		}
	}
}

// TestCrashDuringCheckpoints kills a checkpointing process 30 times at random
// moments (before, while and after data files are written and commits
// made). After every kill the table must be readable and hold only ranges
// the child had recorded, and the next checkpoint from the same local tier
// must bring the table up to it.
func TestCrashDuringCheckpoints(t *testing.T) {
	kills := 30
	if testing.Short() {
		kills = 5
	}
	crashDuringCheckpoints(t, newEnv(t), kills)
}

func crashDuringCheckpoints(t *testing.T, e *env, kills int) {
	propsJSON, _ := json.Marshal(e.props)
	crashInto(t, e.table, kills, childProps+"="+string(propsJSON), childNS+"="+e.namespace)
}

// checkAfterKill checks a tier after a checkpointing child was killed: it
// is readable and covers only ranges the child had recorded; and a Mirror
// restarted on the child's local tier (restart) brings it up to that local
// tier with one Sync.
func checkAfterKill(t *testing.T, kill int, tier durable.Tier, attempted map[int32]*coverage.RangeSet, restart func() *Mirror) {
	t.Helper()
	got, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatalf("kill %d: %s is not readable: %v", kill, tier.Name(), err)
	}
	for d, set := range got {
		if over := coverage.Gaps(set, attempted[d.Partition]); !over.IsEmpty() {
			t.Fatalf("kill %d: %s covers %v of %s that the child never recorded", kill, tier.Name(), over.String(), d)
		}
	}
	m := restart()
	if err := m.Sync(ctx); err != nil {
		t.Fatalf("kill %d: sync after restart: %v", kill, err)
	}
	got, _ = tier.Coverage(ctx, durable.Filter{})
	for p := range int32(2) {
		d := coverage.Destination{Sink: "lake", Topic: "orders", Partition: p}
		localSet, _ := m.Covered(ctx, d)
		held := got[d]
		if held == nil {
			held = new(coverage.RangeSet)
		}
		if missing := coverage.Gaps(&localSet, held); !missing.IsEmpty() {
			t.Fatalf("kill %d: after the restart's checkpoint %s still lacks %v of %s", kill, tier.Name(), missing.String(), d)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
}

func readAttempted(t *testing.T, path string, offset int64, into map[int32]*coverage.RangeSet) int64 {
	t.Helper()
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return offset
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(offset, 0); err != nil {
		t.Fatal(err)
	}
	rd := bufio.NewReader(f)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return offset
		}
		offset += int64(len(line))
		var p int32
		var start, end uint64
		if _, err := fmt.Sscanf(line, "%d %d %d", &p, &start, &end); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		_ = into[p].Add(coverage.Range{Start: start, End: end})
	}
}
