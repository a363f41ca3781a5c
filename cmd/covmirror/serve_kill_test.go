package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/testseed"
)

// ackMargin is how long before a SIGKILL a record's 200 must have come for
// the record to be owed after a restart: local.Options.CommitDelay (2ms by
// default) and one write-behind commit, which is a write to the page
// cache, bounded generously for a loaded machine. A 200 closer to the kill
// may or may not survive: its commit may not have run yet.
const ackMargin = 500 * time.Millisecond

// TestServeProcessSurvivesSIGKILL records through a real `covmirror serve`
// process's API, one batch per request, and SIGKILLs the process at
// seeded random moments, several times over one state directory. After
// each kill a new serve on the same state checkpoints, and every record
// answered 200 more than ackMargin before the kill must be in the durable
// tier's committed coverage: a 200 is on the pod's disk (in the operating
// system's hands) once its write-behind commit ran, not only after the
// next checkpoint. The checkpoint interval is an hour, so only the local
// tier can have kept them. On each durable tier: the embedded coverage
// table, the sink objects, PostgreSQL.
func TestServeProcessSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: serve killed on each tier (local's TestKilledProcessKeepsEveryCommit checks the WAL in make test); make test-slow runs it")
	}
	bin := buildBinary(t)
	seed := testseed.Seed(t)
	for i, tier := range []string{"iceberg", "object", "postgres"} {
		t.Run(tier, func(t *testing.T) {
			t.Setenv("COVMIRROR_DURABLE", tier)
			if tier == "postgres" {
				postgresSchemaEnv(t)
			}
			serveKills(t, bin, rand.New(rand.NewPCG(seed, uint64(i))), 3)
		})
	}
}

// postgresSchemaEnv points serve at a fresh schema of the test database,
// through the environment, and drops it at the end.
func postgresSchemaEnv(t *testing.T) {
	url := catalogtest.PostgresURL()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	schema := fmt.Sprintf("covmirror_kill_%d", time.Now().UnixNano())
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
		_ = conn.Close(context.Background())
	})
	t.Setenv("COVMIRROR_POSTGRES_URL", url)
	t.Setenv("COVMIRROR_POSTGRES_SCHEMA", schema)
}

// acked is a record answered 200: when, and how long before the kill that
// followed it.
type acked struct {
	id     uint64
	at     time.Time
	toKill time.Duration
}

// serveKills runs the kills on one state directory: raw covers every batch
// (checkpointed first), lake gets one batch per request, and lake's gaps
// against raw after each restart are the records the durable tier lacks.
func serveKills(t *testing.T, bin string, rng *rand.Rand, kills int) {
	state := t.TempDir()
	p := startServe(t, bin, state)
	base := "http://" + p.addr
	if code, body := call(t, http.DefaultClient, "POST", base+"/v1/records", `[{"sink":"raw","topic":"orders","partition":0,"start":0,"end":1099511627776}]`); code != 200 {
		t.Fatalf("record raw: %d %s", code, body)
	}
	if code, body := call(t, http.DefaultClient, "POST", base+"/v1/checkpoint", ""); code != 200 {
		t.Fatalf("checkpoint: %d %s", code, body)
	}
	var all []acked
	next := uint64(0)
	for round := 1; round <= kills; round++ {
		var wg sync.WaitGroup
		var got []acked
		wg.Go(func() { got, next = recordUntilRefused(base, next) })
		time.Sleep(ackMargin + time.Duration(100+rng.IntN(1400))*time.Millisecond) // some records are owed each round
		killAt := time.Now()
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = p.cmd.Wait()
		if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: serve ended on its own before the kill: %s", round, p.stderr.String())
		}
		wg.Wait()
		owed := 0
		for _, a := range got {
			a.toKill = killAt.Sub(a.at)
			all = append(all, a)
		}
		for _, a := range all {
			if a.toKill > ackMargin {
				owed++
			}
		}
		p = startServe(t, bin, state)
		base = "http://" + p.addr
		if code, body := call(t, http.DefaultClient, "POST", base+"/v1/checkpoint", ""); code != 200 {
			t.Fatalf("round %d: checkpoint after the restart: %d %s", round, code, body)
		}
		code, body := call(t, http.DefaultClient, "GET", base+"/v1/gaps?sink=lake", "")
		var gaps []struct{ Start, End uint64 }
		if err := json.Unmarshal([]byte(body), &gaps); code != 200 || err != nil {
			t.Fatalf("round %d: gaps: %d %s (%v)", round, code, body, err)
		}
		lost, late := 0, 0
		var lostIDs []string
		var oldestLate time.Duration
		for _, a := range all {
			missing := false
			for _, g := range gaps {
				missing = missing || (a.id >= g.Start && a.id < g.End)
			}
			switch {
			case missing && a.toKill > ackMargin:
				lost++
				if len(lostIDs) < 10 {
					lostIDs = append(lostIDs, fmt.Sprintf("%d (%s before its kill)", a.id, a.toKill.Round(time.Millisecond)))
				}
			case missing:
				late++
				oldestLate = max(oldestLate, a.toKill)
			}
		}
		t.Logf("round %d: %d records answered 200 so far, %d of them more than %s before their kill; %d later ones not kept, the oldest answered %s before its kill",
			round, len(all), owed, ackMargin, late, oldestLate)
		if lost > 0 || owed == 0 {
			t.Fatalf("round %d: %d of the %d records answered 200 more than %s before the SIGKILL are not committed after a restart and a checkpoint: %s",
				round, lost, owed, ackMargin, strings.Join(lostIDs, ", "))
		}
	}
	p.stop(t)
}

// recordUntilRefused records lake's batches from next on, one per request,
// until a request fails (the process was killed); it returns those
// answered 200 and the next id.
func recordUntilRefused(base string, next uint64) ([]acked, uint64) {
	client := &http.Client{Timeout: 10 * time.Second}
	var got []acked
	for ; ; next++ {
		body := fmt.Sprintf(`[{"sink":"lake","topic":"orders","partition":0,"start":%d,"end":%d}]`, next, next+1)
		resp, err := client.Post(base+"/v1/records", "application/json", strings.NewReader(body))
		if err != nil {
			return got, next + 1
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			got = append(got, acked{id: next, at: time.Now()})
		}
	}
}
