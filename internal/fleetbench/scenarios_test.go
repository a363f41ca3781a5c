package fleetbench

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/covmirror/covmirror/durable"
	"github.com/covmirror/covmirror/internal/catalogtest"
	"github.com/covmirror/covmirror/internal/fleetsim"
	"github.com/covmirror/covmirror/object"
	"github.com/covmirror/covmirror/postgres"
)

// A scenario is one tier at one pod count and interval.
type scenario struct {
	name string
	// about says, for the report, what runs and why at this size.
	about string
	// realTime runs outside a synctest bubble (a real server).
	realTime bool
	// setup fills in the tier (OpenTier, Stats, Compactor) of o for the
	// test, registering cleanups with t.
	setup func(t *testing.T, o *fleetsim.Options)
	opts  fleetsim.Options
}

// fullShare is a pod's share of the fleet's partitions at 500 pods: the
// pod-count baselines own what one pod of the full fleet owns.
const fullShare = fleetsim.DefaultTopics * fleetsim.DefaultPartitionsPerTopic / fleetsim.DefaultPods

// The tier under test is a parameter of each scenario: a new write path
// (the object tier's per-pod checkpoint objects, folded by one compactor)
// is a new setup, its fold the Compactor, beside these. Today's object
// tier runs at 1, 16 and 64 pods, not 500: every pod rewrites all five
// sink objects, each holding every partition's ranges, so each handle
// caches five objects of the whole fleet (gigabytes at 500 pods), and one
// object takes one write per read-to-write window (about 8 a second over
// simulated S3) against the 50 to 500 a second 500 pods offer.
var scenarios = []scenario{
	{name: "object-N=1-1s", about: "baseline: one pod on today's object tier (one object per sink) over simulated S3",
		setup: objectTier(fleetsim.S3Options{}), opts: fleetsim.Options{Pods: 1, PartitionsPerPod: fullShare, Rounds: 60}},
	{name: "object-zero-N=16-1s", about: "today's object tier, S3 without latency: BenchmarkPodsOneTable's object baseline",
		setup: objectTier(fleetsim.S3Options{NoLatency: true}), opts: fleetsim.Options{Pods: 16, PartitionsPerPod: fullShare, Rounds: 10}},
	{name: "object-N=16-1s", about: "today's object tier at a pod count it finishes: every pod rewrites all 5 sink objects",
		setup: objectTier(fleetsim.S3Options{}), opts: fleetsim.Options{Pods: 16, PartitionsPerPod: fullShare, Rounds: 30}},
	{name: "object-N=64-10s", about: "today's object tier, 64 pods at 10 s",
		setup: objectTier(fleetsim.S3Options{}), opts: fleetsim.Options{Pods: 64, PartitionsPerPod: fullShare, Interval: 10 * time.Second, Rounds: 6}},
	{name: "table-N=500-1s", about: "the coverage table as primary (simulated catalog commit), 500 pods at 1 s",
		setup: catalogTable, opts: fleetsim.Options{Pods: 500, Rounds: 30}},
	{name: "table-N=500-10s", about: "the coverage table as primary (simulated catalog commit), 500 pods at 10 s",
		setup: catalogTable, opts: fleetsim.Options{Pods: 500, Interval: 10 * time.Second, Rounds: 6}},
	{name: "table-N=1000-10s", about: "the coverage table as primary, 1,000 pods at 10 s",
		setup: catalogTable, opts: fleetsim.Options{Pods: 1000, Interval: 10 * time.Second, Rounds: 6}},
	{name: "postgres-N=500-10s", about: "PostgreSQL for real (127.0.0.1:5432), real time: 500 pods over 8 pools of 4 connections", realTime: true,
		setup: postgresTier, opts: fleetsim.Options{Pods: 500, Interval: 10 * time.Second, Rounds: 3}},
}

// objectTier is today's object tier over one simulated bucket, a handle
// per pod as separate processes have.
func objectTier(s3 fleetsim.S3Options) func(t *testing.T, o *fleetsim.Options) {
	return func(t *testing.T, o *fleetsim.Options) {
		s3.Seed = o.Seed
		s, err := fleetsim.NewS3(s3)
		if err != nil {
			t.Fatal(err)
		}
		o.OpenTier = func(ctx context.Context, _ int) (durable.Tier, error) {
			return object.Open(ctx, object.Options{Blobs: s})
		}
		o.Stats = fleetsim.S3Counters(s)
	}
}

// catalogTable is one coverage table whose commits are the simulated
// catalog's pointer swaps; every pod commits to it.
func catalogTable(t *testing.T, o *fleetsim.Options) {
	c, err := fleetsim.NewCatalog(fleetsim.CatalogOptions{Inner: fleetsim.NewMemTier(), Seed: o.Seed})
	if err != nil {
		t.Fatal(err)
	}
	o.OpenTier = func(context.Context, int) (durable.Tier, error) { return c, nil }
	o.Stats = fleetsim.CatalogCounters(c)
}

// postgresPools is how many postgres.Tier handles (each a pool of pgx's
// default size) the pods share: a handle per pod would pass the server's
// max_connections at this pod count.
const postgresPools = 8

// postgresTier is the PostgreSQL tier in a fresh schema, dropped after.
func postgresTier(t *testing.T, o *fleetsim.Options) {
	ctx := context.Background()
	admin, err := pgxpool.New(ctx, catalogtest.PostgresURL())
	if err == nil {
		err = admin.Ping(ctx)
	}
	if err != nil {
		t.Fatal(catalogtest.Unreachable(err))
	}
	schema := catalogtest.Namespace()
	t.Cleanup(func() {
		if _, err := admin.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
		admin.Close()
	})
	tiers := make([]*postgres.Tier, postgresPools+1) // the last: the final check's reader
	for i := range tiers {
		if tiers[i], err = postgres.Open(ctx, postgres.Options{URL: catalogtest.PostgresURL(), Schema: schema}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(tiers[i].Close)
	}
	o.OpenTier = func(_ context.Context, pod int) (durable.Tier, error) {
		if pod < 0 {
			return tiers[postgresPools], nil
		}
		return tiers[pod%postgresPools], nil
	}
	o.Stats = func() fleetsim.Counters {
		var retries int64
		for _, tier := range tiers {
			retries += tier.Retries()
		}
		return fleetsim.Counters{LostRaces: retries}
	}
}

func find(name string) (scenario, error) {
	for _, s := range scenarios {
		if s.name == name {
			return s, nil
		}
	}
	return scenario{}, fmt.Errorf("no scenario %q", name)
}
