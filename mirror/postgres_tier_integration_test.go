//go:build integration

package mirror

import (
	"slices"
	"testing"

	"github.com/covmirror/covmirror/coverage"
	"github.com/covmirror/covmirror/durable"
)

// TestPostgresTierStoppedServer stops the private PostgreSQL holding the
// PostgreSQL tier under a running owner: checkpoints fail with the
// driver's error while records keep landing locally and the rows keep
// what they had; after the server is started again on the same directory
// one Sync carries everything.
func TestPostgresTierStoppedServer(t *testing.T) {
	pg := startPrivatePostgres(t)
	tier, _, _ := postgresTier(t, pg.url)
	outageOn(t, tier, restartOn(t, tier, "", "pod-a"), outage{what: "PostgreSQL stopped", begin: pg.stop, end: pg.start, wantErr: "connection refused"})
}

// TestPostgresTierRestartedServer restarts the private PostgreSQL between
// checkpoints, quicker than the pool pings its idle connections (1 s): the
// next checkpoint must land, not fail on a connection the restart ended.
func TestPostgresTierRestartedServer(t *testing.T) {
	pg := startPrivatePostgres(t)
	tier, _, _ := postgresTier(t, pg.url)
	m := restartOn(t, tier, "", "pod-a")
	defer m.Close()
	d := coverage.Destination{Sink: "lake", Topic: "orders"}
	for round := range uint64(3) {
		record(t, m, d, round*10, round*10+5)
		if err := m.Sync(ctx); err != nil {
			t.Fatalf("round %d: the first checkpoint after a restart: %v", round, err)
		}
		if round < 2 {
			pg.stop(t)
			pg.start(t)
		}
	}
	// The read comes after a checkpoint, on a live connection: a read on
	// a connection a restart ended still fails once (Coverage is not run
	// again the way a transaction's begin is).
	got, err := tier.Coverage(ctx, durable.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []coverage.Range{rg(0, 5), rg(10, 15), rg(20, 25)}; got[d] == nil || !slices.Equal(got[d].Ranges(), want) {
		t.Fatalf("%s holds %v, want %v", tier.Name(), got[d], want)
	}
}
