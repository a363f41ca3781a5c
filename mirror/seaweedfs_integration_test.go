//go:build integration

package mirror

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/covmirror/covmirror/iceberg"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/childproc"
	"github.com/covmirror/covmirror/internal/seaweedtest"
)

// restEnv is a coverage table in a fresh namespace of a SeaweedFS REST
// catalog (lowercase names, as its table buckets want).
func restEnv(t *testing.T, server *seaweedtest.Server) *env {
	t.Helper()
	return newEnvWith(t, server.Props(), catalogtest.Namespace())
}

func TestTwoProcessesCheckpointConcurrentlySeaweedFS(t *testing.T) {
	twoProcesses(t, restEnv(t, seaweedtest.Start(t)))
}

func TestCrashDuringCheckpointsSeaweedFS(t *testing.T) {
	crashDuringCheckpoints(t, restEnv(t, seaweedtest.Start(t)), 10)
}

// TestServerKilledWhileTwoOwnersCheckpointSeaweedFS: SeaweedFS is SIGKILLed
// while two owners checkpoint overlapping coverage, and restarted on the
// same directory. The owners keep recording and retry their checkpoints;
// afterwards the table holds exactly the union of what they recorded (no
// checkpointed range lost, nothing claimed that was not recorded), and no
// checkpoint appears in two snapshots.
func TestServerKilledWhileTwoOwnersCheckpointSeaweedFS(t *testing.T) {
	server := seaweedtest.Start(t)
	e := restEnv(t, server)
	propsJSON, _ := json.Marshal(e.props)
	var owners []*childproc.Child
	for w := range 2 {
		owners = append(owners, childproc.Start(t, "persistent", childProps+"="+string(propsJSON), childNS+"="+e.namespace,
			childLocal+"="+t.TempDir(), childWriter+"=owner-"+string(rune('0'+w)), childNoExpiry+"=1"))
	}
	time.Sleep(time.Second)
	server.Kill(t)
	time.Sleep(2 * time.Second)
	back := time.Now()
	server.Restart(t)
	for w, owner := range owners {
		owner.Wait(t, "owner "+string(rune('0'+w)))
		out := strings.TrimSpace(owner.Output())
		t.Logf("owner %d: %s", w, out)
		var failures int
		var longest string
		var doneAt int64
		if _, err := fmt.Sscanf(out[strings.LastIndex(out, "\n")+1:], "%d failed checkpoints, longest %s done at %d", &failures, &longest, &doneAt); err != nil {
			t.Fatalf("owner %d's report %q: %v", w, out, err)
		}
		if doneAt < back.UnixNano() {
			t.Fatalf("owner %d finished before SeaweedFS was back: the outage did not fall mid-stream", w)
		}
	}
	requireOwnersUnion(t, e)
	tbl, err := e.table.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int64{}
	for _, snap := range tbl.Metadata().Snapshots() {
		name := snap.Summary.Properties[iceberg.SummaryCheckpoint]
		if first, dup := seen[name]; dup && name != "" {
			t.Fatalf("checkpoint %s is in snapshots %d and %d", name, first, snap.SnapshotID)
		}
		seen[name] = snap.SnapshotID
	}
	t.Logf("%d checkpoints, each in one snapshot", len(seen))
}
